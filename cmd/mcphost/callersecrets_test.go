package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/otlptest"
	"github.com/mcphost-project/mcphost/internal/pgtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Values of the callers' secrets in TestCallerSecrets: none may show in a
// log line, /status, /metrics, a trace, the audit log or a command's output.
const (
	aliceSecret1 = "alice-secret-VALUE-one-7f3a"
	aliceSecret2 = "alice-secret-VALUE-two-91c2"
	bobSecret    = "bob-secret-VALUE-5d8e"
	stolenSecret = "alice-typed-this-for-bob-0b44"
)

// callerSecretsConfig: gh reads the caller's GITHUB_TOKEN; notes is per
// identity too but reads no secret. The test upstream's env tool reports
// its process's environment, and pid its process id.
const callerSecretsConfig = `
listen {
  http = "%s"
  auth {
    admin_groups = ["admins"]
    key "alice" {
      value   = "` + aliceKey + `"
      subject = "alice"
    }
    key "bob" {
      value   = "` + bobKey + `"
      subject = "bob"
    }
    key "admin" {
      value   = "` + adminKey + `"
      subject = "root"
      groups  = ["admins"]
    }
  }
}
admin {
  http = "%s"
}
store {
  %s
  key  = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
  poll = "200ms"
}
# Arguments, not results: the env tool answers with the value, by design.
audit {
  file      = "%s"
  arguments = true
}
traces {
  otlp_endpoint = "%s"
}
server "gh" {
  command = "UPSTREAM"
  args    = ["-name", "gh", "-memory"]
  env     = { GITHUB_TOKEN = caller.secrets.GITHUB_TOKEN }
}
server "notes" {
  command = "UPSTREAM"
  args    = ["-name", "notes", "-memory"]
  env     = { WHO = caller.subject }
}
`

// secretReplica is one mcphost of TestCallerSecrets.
type secretReplica struct {
	addr, admin string
	proc        *runningMcphost
}

func startSecretReplica(t *testing.T, storeLine, auditFile, traces string) secretReplica {
	t.Helper()
	r := secretReplica{addr: testproc.FreeAddr(t), admin: testproc.FreeAddr(t)}
	cfg := writeConfig(t, fmt.Sprintf(callerSecretsConfig, r.addr, r.admin, storeLine, auditFile, traces))
	r.proc = startMcphost(t, "http://"+r.admin+"/openapi.json", 30*time.Second, "run", cfg, "--log-level", "debug")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcphost at %s:\n%s", r.addr, r.proc.logs)
		}
	})
	return r
}

// TestCallerSecrets is issue 31's per-user secrets with real processes:
// alice's secret, set with `mcphost users secret set` from stdin, reaches
// her upstream process's environment alone; bob, who has none, gets the
// link to the secret page in an error result, or, from a client that
// takes URL elicitations, is asked to open it, and his call goes on once
// he gave it there. The link is bound to bob: alice's credential is
// refused on it. A change of alice's secret restarts her gh process
// alone (not bob's, not her notes process); with PostgreSQL a change made
// through one replica restarts her session on the other. No value shows
// in a log, /status, /metrics, a trace, the audit log or a command's
// output.
func TestCallerSecrets(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		testCallerSecrets(t, fmt.Sprintf("sqlite = %q", filepath.Join(dir, "state.db")), 1)
	})
	t.Run("postgres", func(t *testing.T) {
		testCallerSecrets(t, fmt.Sprintf("postgres = %q", pgtest.NewDatabase(t)), 2)
	})
}

func testCallerSecrets(t *testing.T, storeLine string, replicas int) {
	dir := t.TempDir()
	rcv := otlptest.Start(t)
	var rs []secretReplica
	for i := range replicas {
		rs = append(rs, startSecretReplica(t, storeLine, filepath.Join(dir, fmt.Sprintf("audit-%d.jsonl", i)), rcv.URL))
	}
	a := rs[0]
	var outputs bytes.Buffer // every command's output, searched for values at the end
	cli := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(mcphostBin, append(append([]string{"users", "secret"}, args...), "--admin", "http://"+a.admin, "--key", adminKey)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		outputs.Write(out)
		if err != nil {
			t.Fatalf("mcphost users secret %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	call := func(cs *mcp.ClientSession, tool string, args any) (string, bool) {
		t.Helper()
		return callText(t, cs, &mcp.CallToolParams{Name: tool, Arguments: args})
	}
	token := map[string]any{"text": "GITHUB_TOKEN"}

	if out := cli(aliceSecret1+"\n", "set", "alice", "GITHUB_TOKEN"); !strings.Contains(out, "set secret GITHUB_TOKEN of alice") {
		t.Fatalf("secret set: %q", out)
	}
	alice := connectKey(t, a.addr, aliceKey, nil)
	if got, isErr := call(alice, "gh__env", token); isErr || got != aliceSecret1 {
		t.Fatalf("alice's gh process has GITHUB_TOKEN %q (error %v), want her secret", got, isErr)
	}
	ghA1, _ := call(alice, "gh__pid", nil)
	notesA1, _ := call(alice, "notes__pid", nil)

	// Bob has no secret: the link, in the result.
	bob := connectKey(t, a.addr, bobKey, nil)
	got, isErr := call(bob, "gh__env", token)
	link := regexp.MustCompile(`http://\S+/secret\?request=[\w-]+`).FindString(got)
	if !isErr || link == "" || strings.Contains(got, aliceSecret1) {
		t.Fatalf("bob without a secret: %q (error %v), want an error result with the secret page's link", got, isErr)
	}
	// The link is bob's: alice's credential is refused there.
	if code, page := postSecret(t, link, aliceKey, stolenSecret); code != http.StatusForbidden || !strings.Contains(page, "issued to mcphost user bob") {
		t.Fatalf("alice on bob's link: %d %q, want 403", code, page)
	}
	if out := cli("", "list", "bob"); !strings.Contains(out, "bob has no secrets") {
		t.Fatalf("after alice's try, bob's secrets: %q", out)
	}

	// From a client that takes URL elicitations, bob is asked, gives it
	// on the page, and the call goes on.
	var mu sync.Mutex
	var asked, completed []string
	bobURL := connectKey(t, a.addr, bobKey, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.URL)
			mu.Unlock()
			go func() { // bob's browser, after his client answered
				if code, page := postSecret(t, req.Params.URL, bobKey, bobSecret); code != http.StatusOK {
					t.Errorf("bob on his link: %d %q", code, page)
				}
			}()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			mu.Lock()
			completed = append(completed, req.Params.ElicitationID)
			mu.Unlock()
		},
	})
	if got, isErr := call(bobURL, "gh__env", token); isErr || got != bobSecret {
		t.Fatalf("bob's call after he gave his secret: %q (error %v)", got, isErr)
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "/secret?request=") {
		t.Errorf("bob was asked %q, want one secret page link", asked)
	}
	mu.Unlock()
	within(t, "the client to hear the elicitation completed", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(completed) == 1
	})
	ghB1, _ := call(bobURL, "gh__pid", nil)
	if got, _ := call(alice, "gh__env", token); got != aliceSecret1 {
		t.Errorf("alice's GITHUB_TOKEN after bob gave his: %q", got)
	}
	if ghB1 == ghA1 {
		t.Errorf("alice and bob share gh process %s", ghA1)
	}

	// Alice's secret changes (the admin API): her gh process restarts,
	// with the new value; bob's, and her notes process, stay.
	putSecret(t, a.admin, "alice", "GITHUB_TOKEN", aliceSecret2)
	if got, _ := call(alice, "gh__env", token); got != aliceSecret2 {
		t.Errorf("alice's GITHUB_TOKEN after the change: %q", got)
	}
	if ghA2, _ := call(alice, "gh__pid", nil); ghA2 == ghA1 {
		t.Errorf("alice's gh process %s did not restart on her secret's change", ghA1)
	}
	if notesA2, _ := call(alice, "notes__pid", nil); notesA2 != notesA1 {
		t.Errorf("alice's notes process restarted (%s -> %s): it reads no secret", notesA1, notesA2)
	}
	if ghB2, _ := call(bobURL, "gh__pid", nil); ghB2 != ghB1 {
		t.Errorf("bob's gh process restarted (%s -> %s) on alice's change", ghB1, ghB2)
	}

	if len(rs) > 1 {
		// A change through replica a restarts alice's session on b.
		b := rs[1]
		aliceB := connectKey(t, b.addr, aliceKey, nil)
		if got, _ := call(aliceB, "gh__env", token); got != aliceSecret2 {
			t.Fatalf("alice on replica b: %q", got)
		}
		bobB := connectKey(t, b.addr, bobKey, nil)
		ghBobB, _ := call(bobB, "gh__pid", nil)
		cli(aliceSecret1, "set", "alice", "GITHUB_TOKEN")
		took := within(t, "replica b to restart alice's gh session", 2*time.Second, func() bool {
			got, _ := call(aliceB, "gh__env", token)
			return got == aliceSecret1
		})
		t.Logf("replica b restarted alice's session after %s", took)
		if got, _ := call(bobB, "gh__pid", nil); got != ghBobB {
			t.Errorf("bob's gh process on replica b restarted (%s -> %s) on alice's change", ghBobB, got)
		}
	}

	// Deleted: her next call asks for it again.
	if out := cli("", "list", "alice"); !strings.Contains(out, "GITHUB_TOKEN") {
		t.Errorf("alice's secrets: %q", out)
	}
	cli("", "delete", "alice", "GITHUB_TOKEN")
	if got, isErr := call(alice, "gh__env", token); !isErr || !strings.Contains(got, "/secret?request=") {
		t.Errorf("alice after her secret was deleted: %q (error %v), want the link", got, isErr)
	}
	if out := cli("", "list", "bob", "--json"); !strings.Contains(out, `"GITHUB_TOKEN"`) {
		t.Errorf("bob's secrets: %q", out)
	}

	// No value anywhere but in the processes' environments.
	var seen bytes.Buffer
	seen.Write(outputs.Bytes())
	for _, r := range rs {
		seen.WriteString(r.proc.logs.String())
		for _, path := range []string{"http://" + r.addr + "/status", "http://" + r.addr + "/metrics", "http://" + r.admin + "/v1/users/alice/secrets",
			"http://" + r.admin + "/v1/servers", "http://" + r.admin + "/metrics"} {
			seen.Write(adminGet(t, path))
		}
	}
	for i := range rs {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("audit-%d.jsonl", i)))
		if err != nil || !bytes.Contains(b, []byte("gh__env")) {
			t.Fatalf("audit log %d: %v; want the calls in it", i, err)
		}
		seen.Write(b)
	}
	if st := adminGetString(t, "http://"+a.addr+"/status"); !strings.Contains(st, `"callerSecrets":["GITHUB_TOKEN"]`) {
		t.Errorf("/status does not name the secret gh reads: %s", st)
	}

	// Stopped, the replicas export the spans they hold.
	for _, r := range rs {
		r.proc.stop(syscall.SIGTERM, 15*time.Second)
	}
	var spans int
	for _, s := range rcv.Spans() {
		fmt.Fprintf(&seen, "%v\n", s.Span)
		if strings.Contains(fmt.Sprint(s.Span), "gh__env") {
			spans++
		}
	}
	if spans == 0 {
		t.Error("no span of the gh__env calls was exported")
	}
	for _, v := range []string{aliceSecret1, aliceSecret2, bobSecret, stolenSecret} {
		if bytes.Contains(seen.Bytes(), []byte(v)) {
			t.Errorf("the secret value %q shows in the logs, status, metrics, traces, audit log or a command's output", v)
		}
	}
}

// postSecret submits the secret page of link as the holder of key.
func postSecret(t *testing.T, link, key, value string) (int, string) {
	u, err := url.Parse(link)
	if err != nil {
		t.Errorf("link %q: %v", link, err)
		return 0, ""
	}
	resp, err := http.PostForm(u.Scheme+"://"+u.Host+u.Path, url.Values{
		"request": {u.Query().Get("request")}, "credential": {key}, "value.GITHUB_TOKEN": {value}})
	if err != nil {
		t.Errorf("posting the secret page: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// putSecret sets a caller's secret through the admin API.
func putSecret(t *testing.T, admin, subject, name, value string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"value": value})
	req, _ := http.NewRequest(http.MethodPut, "http://"+admin+"/v1/users/"+subject+"/secrets/"+name, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte(value)) {
		t.Fatalf("PUT secret: %d %s", resp.StatusCode, b)
	}
}

func adminGet(t *testing.T, u string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return b
}

func adminGetString(t *testing.T, u string) string { return string(adminGet(t, u)) }
