package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

const (
	serversAdminKey  = "k-123-0123456789abcdef"
	serversViewerKey = "k-456-0123456789abcdef"
)

// adminConfig is a config with the admin API on ADMIN and its store beside
// the config: "op" may use it, "viewer" is no admin.
const adminConfig = `
listen {
  auth {
    key "op" {
      value   = "` + serversAdminKey + `"
      subject = "op"
      groups  = ["admins"]
    }
    key "viewer" {
      value   = "` + serversViewerKey + `"
      subject = "viewer"
      groups  = ["eng"]
    }
  }
}
admin {
  http = "ADMIN"
}
store {
  sqlite = "servers.db"
}
`

// cli runs the CLI in this process, as main would, and returns what it
// printed and its exit status.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	var ee exitError
	switch {
	case errors.As(err, &ee):
		code = int(ee)
	case err != nil:
		errb.WriteString("mcphost: " + err.Error() + "\n")
		code = 1
	}
	return out.String(), errb.String(), code
}

// startAdmin runs mcphost on cfg until the test ends and waits for its
// admin API; stop ends it with SIGTERM and waits.
func startAdmin(t *testing.T, cfg, adminAddr string) (stop func()) {
	t.Helper()
	m := startMcphost(t, "http://"+adminAddr+"/openapi.json", 30*time.Second, "run", cfg, "--http", testproc.FreeAddr(t), "--no-watch")
	stop = func() {
		if !m.stop(syscall.SIGTERM, 15*time.Second) {
			t.Errorf("mcphost did not end after SIGTERM; logs:\n%s", m.logs.String())
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestServersCommands drives mcphost servers against a real mcphost and a
// real upstream: add, list, test, update, disconnect, reconnect, the
// server remembered across a restart, rm; and the errors a user meets.
func TestServersCommands(t *testing.T) {
	for _, k := range []string{"MCPHOST_ADMIN", "MCPHOST_ADMIN_KEY", "MCPHOST_TOKEN"} {
		t.Setenv(k, "")
	}
	adminAddr := testproc.FreeAddr(t)
	cfg := writeConfig(t, strings.ReplaceAll(adminConfig, "ADMIN", adminAddr))
	stop := startAdmin(t, cfg, adminAddr)
	admin := "http://" + adminAddr
	as := func(args ...string) (string, string, int) {
		t.Helper()
		// The flags go before the arguments: after --, all is the command line.
		return cli(t, append([]string{"servers", args[0], "--admin", admin, "--key", serversAdminKey}, args[1:]...)...)
	}
	mustOK := func(what string, out, errs string, code int, wants ...string) {
		t.Helper()
		if code != 0 {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, code, out, errs)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s: stdout lacks %q:\n%s", what, w, out)
			}
		}
	}

	// Add a stdio server: the answer says it connected, with its tools.
	out, errs, code := as("add", "up", "--", upstreamBin, "-name", "first")
	mustOK("add", out, errs, code, "added up: connected, ")
	if !strings.Contains(out, " tools") {
		t.Errorf("add does not count the tools: %q", out)
	}
	// A second add of the name is refused.
	_, errs, code = as("add", "up", "--", upstreamBin)
	if code != 1 || !strings.Contains(errs, "mcphost servers: Server exists") || !strings.Contains(errs, "  name: taken") {
		t.Errorf("add of a taken name: exit %d\n%s", code, errs)
	}

	// list: the table, the server connected, its command line.
	out, errs, code = as("list")
	mustOK("list", out, errs, code, "NAME", "SOURCE", "STATE", "TOOLS", "TRANSPORT")
	if !lineHas(out, "up", "store", "connected", "stdio", upstreamBin+" -name first") {
		t.Errorf("list does not show up connected:\n%s", out)
	}
	out, errs, code = as("list", "--json")
	mustOK("list --json", out, errs, code)
	var listed struct {
		Servers []struct {
			Name    string `json:"name"`
			Version int64  `json:"version"`
			Status  struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed.Servers) != 1 || listed.Servers[0].Version != 1 {
		t.Fatalf("list --json: %v\n%s", err, out)
	}

	// test through the running mcphost: it starts the definition itself.
	out, errs, code = as("test", "--", upstreamBin, "-name", "probed")
	mustOK("test (remote)", out, errs, code, "server:    probed", "protocol:", "  echo", "— Echoes text.", "timing:")

	// update: only the command line changes; the version goes up.
	out, errs, code = as("update", "up", "--if-version", "1", "--json", "--", upstreamBin, "-name", "second")
	mustOK("update", out, errs, code, `"second"`, `"version": 2`)
	out, errs, code = as("update", "up", "--connect-timeout", "20s")
	mustOK("update of one field", out, errs, code, "updated up (version 3): connected, ")
	// update --file replaces the whole definition (PUT).
	def := filepath.Join(t.TempDir(), "up.json")
	if err := os.WriteFile(def, []byte(`{"command": "`+upstreamBin+`", "args": ["-name", "third"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = as("update", "up", "--file", def, "--if-version", "3")
	mustOK("update --file", out, errs, code, "updated up (version 4): connected, ")
	out, _, _ = as("list")
	if !lineHas(out, "up", upstreamBin+" -name third") {
		t.Errorf("list after update:\n%s", out)
	}
	// An update against a stale version changes nothing.
	_, errs, code = as("update", "up", "--if-version", "1", "--timeout", "5s")
	if code != 1 || !strings.Contains(errs, "Server changed") {
		t.Errorf("stale update: exit %d\n%s", code, errs)
	}

	// disconnect and reconnect say the state they leave.
	out, errs, code = as("disconnect", "up")
	mustOK("disconnect", out, errs, code, "up: disconnected")
	out, _, _ = as("list")
	if !lineHas(out, "up", "disconnected") {
		t.Errorf("list after disconnect:\n%s", out)
	}
	out, errs, code = as("reconnect", "up")
	mustOK("reconnect", out, errs, code, "up: connected, ")

	// A secret arg is sealed or not stored at all: this store has no key.
	_, errs, code = as("add", "sec", "--secret-arg", "1", "--", upstreamBin, "-name", "S3CRET-ARG-0123")
	if code != 1 || !strings.Contains(errs, "no encryption key") || strings.Contains(errs, "S3CRET") {
		t.Errorf("add of a secret arg to a store without a key: exit %d\n%s", code, errs)
	}

	// The errors: no key, no admin, no API, a definition refused.
	_, errs, code = cli(t, "servers", "list", "--admin", admin)
	if code != 1 || !strings.Contains(errs, "mcphost servers: Unauthorized") || !strings.Contains(errs, "--key") || !strings.Contains(errs, "MCPHOST_ADMIN_KEY") {
		t.Errorf("list without a key: exit %d\n%s", code, errs)
	}
	_, errs, code = cli(t, "servers", "list", "--admin", admin, "--key", serversViewerKey)
	if code != 1 || !strings.Contains(errs, "mcphost servers: Forbidden") || !strings.Contains(errs, "admin_groups") {
		t.Errorf("list with a key of no admin: exit %d\n%s", code, errs)
	}
	nobody := testproc.FreeAddr(t)
	_, errs, code = cli(t, "servers", "list", "--admin", nobody)
	if code != 1 || !strings.Contains(errs, "no admin API at http://"+nobody+" (is mcphost running with an admin block?)") {
		t.Errorf("list with no API there: exit %d\n%s", code, errs)
	}
	_, errs, code = as("add", "typo", "--transport", "stdoi", "--", upstreamBin)
	if code != 1 || !strings.Contains(errs, "mcphost servers: Invalid server definition") || !strings.Contains(errs, "\n  transport: ") {
		t.Errorf("add with a transport typo: exit %d\n%s", code, errs)
	}
	_, errs, code = as("add", "gone", "--", "/nonexistent/mcp-server")
	if code != 1 || !strings.Contains(errs, "  command: ") || !strings.Contains(errs, "/nonexistent/mcp-server") {
		t.Errorf("add of a missing program: exit %d\n%s", code, errs)
	}

	// A stored server is served again after a restart.
	stop()
	startAdmin(t, cfg, adminAddr)
	testproc.WaitFor(t, "up to connect after the restart", 30*time.Second, func() bool {
		out, _, _ = as("list")
		return lineHas(out, "up", "store", "connected", upstreamBin+" -name third")
	})

	// rm, guarded by the version.
	_, errs, code = as("rm", "up", "--if-version", "1")
	if code != 1 || !strings.Contains(errs, "Server changed") {
		t.Errorf("rm of a stale version: exit %d\n%s", code, errs)
	}
	out, errs, code = as("rm", "up", "--if-version", "4")
	mustOK("rm", out, errs, code, "removed up")
	out, _, _ = as("list")
	if strings.Contains(out, "up ") || !strings.Contains(out, "no servers") {
		t.Errorf("list after rm:\n%s", out)
	}
	_, errs, code = as("rm", "up")
	if code != 1 || !strings.Contains(errs, "No such server") {
		t.Errorf("rm of a removed server: exit %d\n%s", code, errs)
	}
}

// TestServersTestLocal: without a running mcphost, servers test starts
// the server in-process and reports what it offers, or why it failed.
func TestServersTestLocal(t *testing.T) {
	for _, k := range []string{"MCPHOST_ADMIN", "MCPHOST_ADMIN_KEY", "MCPHOST_TOKEN"} {
		t.Setenv(k, "")
	}
	out, errs, code := cli(t, "servers", "test", "--", upstreamBin, "-name", "local")
	if code != 0 {
		t.Fatalf("test: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"server:    local", "protocol:  20", "  echo", "— Echoes text.", "prompts:", "resources:", "timing:    connect "} {
		if !strings.Contains(out, want) {
			t.Errorf("test output lacks %q:\n%s", want, out)
		}
	}
	out, errs, code = cli(t, "servers", "test", "--json", "--", upstreamBin)
	var res struct {
		OK    bool `json:"ok"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.OK || len(res.Tools) == 0 {
		t.Errorf("test --json: exit %d\n%s%s", code, out, errs)
	}

	missing := filepath.Join(t.TempDir(), "no-such-server")
	_, errs, code = cli(t, "servers", "test", "--", missing, "--flag")
	if code != 1 || !strings.Contains(errs, "  command: ") || !strings.Contains(errs, missing) {
		t.Errorf("test of a missing program: exit %d\n%s", code, errs)
	}
	_, errs, code = cli(t, "servers", "test", "--", "no-such-mcp-server-anywhere")
	if code != 1 || !strings.Contains(errs, `no program "no-such-mcp-server-anywhere"`) {
		t.Errorf("test of a program on no PATH: exit %d\n%s", code, errs)
	}
	// A server that dies at start: the stage, the error, its stderr.
	_, errs, code = cli(t, "servers", "test", "--", upstreamBin, "-fail", "broken on purpose")
	if code != 1 || !strings.Contains(errs, "test failed (connect)") || !strings.Contains(errs, "  broken on purpose") {
		t.Errorf("test of a failing server: exit %d\n%s", code, errs)
	}
}

// TestServersUsage: usage mistakes are exit status 2 and say what to do.
func TestServersUsage(t *testing.T) {
	_, errs, code := cli(t, "servers")
	if code != 2 || !strings.Contains(errs, "mcphost servers add files -- npx") {
		t.Errorf("servers alone: exit %d\n%s", code, errs)
	}
	out, _, code := cli(t, "help")
	if code != 0 || !strings.Contains(out, "mcphost servers list") || !strings.Contains(out, "mcphost servers test -- ") {
		t.Errorf("help does not list the servers commands: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"add", "x"}, "give the server's command line after --"},
		{[]string{"add", "x", "npx", "server"}, "put the server's command line after --"},
		{[]string{"add", "x", "--url", "http://h/mcp", "--", "cmd"}, "not both"},
		{[]string{"update", "x"}, "nothing to change"},
		{[]string{"rm"}, "rm takes one server name"},
		{[]string{"list", "--if-version", "2"}, "flag provided but not defined: -if-version"},
		{[]string{"rm", "x", "--if-version", "0"}, "--if-version takes a version"},
		{[]string{"test", "--local", "--remote", "--", "cmd"}, "not both"},
		{[]string{"add", "x", "--env", "NOEQUALS", "--", "cmd"}, `"NOEQUALS" is not of the form --env K=V`},
		{[]string{"add", "x", "--file", "def.json", "--cwd", "/"}, "leave out --cwd"},
	} {
		_, errs, code := cli(t, append([]string{"servers"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("servers %q: exit %d, want 2 and %q:\n%s", tc.args, code, tc.want, errs)
		}
	}
}

// TestServersPatch: update sends only the fields given, an empty value
// removing one.
func TestServersPatch(t *testing.T) {
	t.Parallel()
	d := defFlags{cwd: "", timeout: "5s", env: listFlag{"A=1", "B="}, headers: listFlag{"X-Key: v"}, command: []string{"npx"}, hasCommand: true}
	p, err := d.patch(map[string]bool{"cwd": true, "timeout": true, "env": true, "header": true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p)
	want := `{"args":null,"command":"npx","cwd":null,"env":{"A":"1","B":null},"headers":{"X-Key":"v"},"timeout":"5s"}`
	if string(got) != want {
		t.Errorf("patch:\n got %s\nwant %s", got, want)
	}
	d = defFlags{secretArgs: listFlag{"1", "3"}, secretURL: false}
	p, err = d.patch(map[string]bool{"secret-arg": true, "secret-url": true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(p); string(got) != `{"secret_args":[1,3],"secret_url":null}` {
		t.Errorf("patch of the secret marks: %s", got)
	}
	d = defFlags{secretArgs: listFlag{"-1"}}
	if _, err := d.patch(map[string]bool{"secret-arg": true}); err == nil {
		t.Error("--secret-arg -1 accepted")
	}
	d = defFlags{secretArgs: listFlag{"1"}, secretURL: true, command: []string{"gh-mcp", "--token", "T"}, hasCommand: true}
	spec, err := d.spec("gh", nil, io.Discard)
	if err != nil || !slices.Equal(spec.SecretArgs, []int{1}) || !spec.SecretURL || spec.Args[1] != "T" {
		t.Errorf("spec with secret marks: %+v %v", spec, err)
	}
}

// A definition file read from stdin is decoded strictly, and takes the
// name given when it has none.
func TestServersSpecFile(t *testing.T) {
	t.Parallel()
	spec, err := readSpecFile("-", "files", strings.NewReader(`{"command": "npx", "args": ["-y", "x"]}`), io.Discard)
	if err != nil || spec.Name != "files" || spec.Command != "npx" || len(spec.Args) != 2 {
		t.Errorf("readSpecFile: %+v, %v", spec, err)
	}
	var errs strings.Builder
	_, err = readSpecFile("-", "files", strings.NewReader(`{"comand": "npx"}`), &errs)
	if err == nil || !strings.Contains(errs.String(), `  comand: unknown field "comand". Did you mean "command"?`) {
		t.Errorf("readSpecFile of a typo: %v\n%s", err, errs.String())
	}
	_, err = readSpecFile("-", "files", strings.NewReader(`{"name": "other", "command": "npx"}`), &errs)
	if err == nil || !strings.Contains(errs.String(), `defines the server "other", not "files"`) {
		t.Errorf("readSpecFile of another name: %v\n%s", err, errs.String())
	}
}

// lineHas reports whether one line of out holds every word.
func lineHas(out string, words ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		ok := true
		for _, w := range words {
			if !strings.Contains(line, w) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
