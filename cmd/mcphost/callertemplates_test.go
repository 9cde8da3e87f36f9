package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestCallerTemplatesIsolateCallers is issue 31's case with a stand-in for
// server-memory (the test upstream's remember tool writes the file named
// by MEMORY_FILE_PATH): the server's env is templated by the caller, so
// alice's entities are only in her file and her upstream process, and bob
// never reads them. Each caller's process gets their own values (env
// reports them), a caller without an attribute the template reads is
// refused with the reason, and the values filled in show in no log line
// and not in /status.
func TestCallerTemplatesIsolateCallers(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, `
listen {
  auth {
    key "alice" {
      value      = "`+aliceKey+`"
      subject    = "alice"
      attributes = { team = "red-team-value" }
    }
    key "bob" {
      value      = "`+bobKey+`"
      subject    = "bob"
      attributes = { team = "blue-team-value" }
    }
    key "admin" {
      value   = "`+adminKey+`"
      subject = "root"
      groups  = ["admins"]
    }
  }
}
server "memory" {
  command = "UPSTREAM"
  args    = ["-name", "memory", "-memory"]
  env     = { MEMORY_FILE_PATH = "`+dir+`/${caller.subject}.jsonl", TEAM = "${caller.attributes.team}" }
}
`)
	addr := testproc.FreeAddr(t)
	logs := startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg, "--http", addr, "--log-level", "debug").logs
	connect := func(key string) *mcp.ClientSession { return connectKey(t, addr, key, nil) }
	call := func(cs *mcp.ClientSession, tool, text string) (string, bool) {
		t.Helper()
		var args any
		if text != "" {
			args = map[string]any{"text": text}
		}
		return callText(t, cs, &mcp.CallToolParams{Name: "memory__" + tool, Arguments: args})
	}
	alice, bob := connect(aliceKey), connect(bobKey)

	if got, isErr := call(alice, "remember", "alice-entity"); isErr || got != "alice-entity\n" {
		t.Fatalf("alice remembering: %q (error %v)", got, isErr)
	}
	if got, isErr := call(bob, "remember", "bob-entity"); isErr || got != "bob-entity\n" {
		t.Fatalf("bob remembering got %q (error %v); alice's entity must not be in it", got, isErr)
	}
	if got, _ := call(alice, "remember", "alice-again"); got != "alice-entity\nalice-again\n" {
		t.Errorf("alice's memory: %q", got)
	}
	for who, want := range map[string]string{"alice": "alice-entity\nalice-again\n", "bob": "bob-entity\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, who+".jsonl")); err != nil || string(b) != want {
			t.Errorf("%s's file: %q (%v), want %q", who, b, err, want)
		}
	}
	if got, _ := call(alice, "env", "TEAM"); got != "red-team-value" {
		t.Errorf("alice's process has TEAM %q", got)
	}
	if got, _ := call(bob, "env", "TEAM"); got != "blue-team-value" {
		t.Errorf("bob's process has TEAM %q", got)
	}
	pidA, _ := call(alice, "pid", "")
	pidB, _ := call(bob, "pid", "")
	if pidA == "" || pidA == pidB {
		t.Errorf("alice's and bob's upstream processes: %q and %q, want two", pidA, pidB)
	}

	// The admin has no team: refused, with the reason.
	admin := connect(adminKey)
	if got, isErr := call(admin, "remember", "root-entity"); !isErr || !strings.Contains(got, `attribute "team"`) {
		t.Errorf("a caller without the attribute: %q (error %v), want a refusal naming it", got, isErr)
	}

	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/status", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	status, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, v := range []string{"red-team-value", "blue-team-value", dir + "/alice.jsonl", dir + "/bob.jsonl"} {
		if strings.Contains(logs.String(), v) {
			t.Errorf("the log holds the filled-in value %q", v)
		}
		if strings.Contains(string(status), v) {
			t.Errorf("/status holds the filled-in value %q", v)
		}
	}
}
