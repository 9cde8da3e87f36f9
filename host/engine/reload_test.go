package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// upstreamBin is host/testdata/upstream, a real stdio MCP server, built
// once for the package's tests.
var upstreamBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcphost-engine-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err := testproc.Build(dir, map[string]string{"upstream": "../testdata/upstream"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	upstreamBin = bins["upstream"]
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// countingScript records each start of a server: it appends its own pid
// to the file named by its first argument, then execs the rest, so the
// server keeps that pid.
const countingScript = `#!/bin/sh
echo $$ >> "$1"
shift
exec "$@"
`

// reloadRig is a config file in a temp dir whose stdio servers run through
// countingScript, and the engine running it.
type reloadRig struct {
	t      *testing.T
	dir    string
	path   string // the config file
	script string
	e      *engine.Engine
}

func newReloadRig(t *testing.T) *reloadRig {
	t.Helper()
	dir := t.TempDir()
	r := &reloadRig{t: t, dir: dir, path: filepath.Join(dir, "mcphost.hcl"), script: filepath.Join(dir, "count.sh")}
	if err := os.WriteFile(r.script, []byte(countingScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

// server is the HCL block of a counted stdio server; extra are more
// arguments to the upstream.
func (r *reloadRig) server(name string, extra ...string) string {
	args := append([]string{filepath.Join(r.dir, name+".starts"), upstreamBin, "-name", name}, extra...)
	quoted, _ := json.Marshal(args) // a JSON list of strings is an HCL list
	return fmt.Sprintf("server %q {\n  command = %q\n  args    = %s\n}\n", name, r.script, quoted)
}

// load writes text as the config file and loads it, as SIGHUP does.
func (r *reloadRig) load(text string) *config.File {
	r.t.Helper()
	if err := os.WriteFile(r.path, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
	file, diags := config.Load(r.path)
	if diags.HasErrors() {
		r.t.Fatalf("config:\n%s\n%v", text, diags.Err())
	}
	return file
}

func (r *reloadRig) start(text string) {
	r.t.Helper()
	log := hclog.New(&hclog.LoggerOptions{Name: r.t.Name(), Level: hclog.Warn, Output: testWriter{r.t}})
	e, err := engine.Start(context.Background(), r.load(text), &engine.Options{Logger: log})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { e.Close() })
	r.e = e
}

func (r *reloadRig) reload(text string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.e.Reload(ctx, r.load(text)); err != nil {
		r.t.Fatal(err)
	}
}

// starts returns the pids of every start of server name so far.
func (r *reloadRig) starts(name string) []int {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name+".starts"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			r.t.Fatalf("%s.starts: %v", name, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// connected waits until exactly names are the host's servers, each
// connected, and returns their pids.
func (r *reloadRig) connected(names ...string) map[string]int {
	r.t.Helper()
	var pids map[string]int
	testproc.WaitFor(r.t, "servers "+strings.Join(names, ", ")+" connected", 30*time.Second, func() bool {
		pids = map[string]int{}
		for _, s := range r.e.Host().Statuses() {
			if s.State != upstream.StateConnected || s.PID == 0 {
				return false
			}
			pids[s.Name] = s.PID
		}
		if len(pids) != len(names) {
			return false
		}
		for _, n := range names {
			if pids[n] == 0 {
				return false
			}
		}
		return true
	})
	return pids
}

// loads returns each plugin's load number (plugins.Status.Load), which a
// reload keeps only when it keeps the plugin.
func (r *reloadRig) loads() map[string]uint64 {
	out := map[string]uint64{}
	for _, s := range r.e.Plugins().Status() {
		out[s.Name] = s.Load
	}
	return out
}

// expectStarts checks how many times each server has started so far.
func (r *reloadRig) expectStarts(want map[string]int) {
	r.t.Helper()
	for name, n := range want {
		if got := r.starts(name); len(got) != n {
			r.t.Errorf("server %s started %d times (pids %v), want %d", name, len(got), got, n)
		}
	}
}

// pidTool calls server's pid tool through the host, policies and all.
func (r *reloadRig) pidTool(server string) int {
	r.t.Helper()
	res, err := r.e.Host().CallTool(context.Background(), abi.Caller{}, server+"__pid", nil)
	if err != nil {
		r.t.Fatalf("%s__pid: %v", server, err)
	}
	if res.IsError {
		r.t.Fatalf("%s__pid failed: %s", server, resultText(res))
	}
	pid, err := strconv.Atoi(resultText(res))
	if err != nil {
		r.t.Fatalf("%s__pid: %v", server, err)
	}
	return pid
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// The policies of the reload tests: a filter and a titles plugin, whose
// titles the second config changes.
const (
	denyPlugin = `
plugin "no-crash" {
  source = "builtin:deny"
  config = { tools = ["*__crash"] }
}
`
	titlesPlugin = `
plugin "titles" {
  source = "builtin:titles"
  config = { overrides = { "a__echo" = "Echo A" } }
}
`
	titlesPluginChanged = `
plugin "titles" {
  source = "builtin:titles"
  config = { overrides = { "a__echo" = "Echo from A" } }
}
`
)

// TestReloadIsExact counts the starts of real upstream processes across
// reloads: an unchanged config restarts nothing and reloads no plugin; a
// changed one starts exactly the servers added or changed, ends the
// removed one, keeps the rest (process and session), and reloads only the
// plugin whose config changed; an edit of comments and layout is no
// change.
func TestReloadIsExact(t *testing.T) {
	t.Parallel()
	r := newReloadRig(t)
	first := r.server("a") + r.server("b") + r.server("c") + denyPlugin + titlesPlugin
	r.start(first)
	pids := r.connected("a", "b", "c")
	r.expectStarts(map[string]int{"a": 1, "b": 1, "c": 1})
	for name, pid := range pids {
		if s := r.starts(name); len(s) == 1 && s[0] != pid {
			t.Fatalf("server %s: status pid %d, started as %d", name, pid, s[0])
		}
	}
	loads, gen := r.loads(), r.e.Plugins().Generation()
	if len(loads) != 2 {
		t.Fatalf("plugins: %v", loads)
	}

	t.Log("(a) the same text again")
	r.reload(first)
	r.expectStarts(map[string]int{"a": 1, "b": 1, "c": 1})
	if got := r.connected("a", "b", "c"); !maps.Equal(got, pids) {
		t.Errorf("pids after the same config: %v, want %v", got, pids)
	}
	if got := r.loads(); !maps.Equal(got, loads) {
		t.Errorf("plugin loads after the same config: %v, want %v", got, loads)
	}
	if g := r.e.Plugins().Generation(); g != gen {
		t.Errorf("plugin generation %d after the same config, want %d kept", g, gen)
	}

	t.Log("(b) b's args changed, c removed, d added, titles' config changed")
	second := r.server("a") + r.server("b", "-echo-description", "Echoes text, v2.") + r.server("d") + denyPlugin + titlesPluginChanged
	r.reload(second)
	r.expectStarts(map[string]int{"a": 1, "b": 2, "c": 1, "d": 1})
	now := r.connected("a", "b", "d")
	if now["a"] != pids["a"] {
		t.Errorf("unchanged server a: pid %d, want %d kept", now["a"], pids["a"])
	}
	if now["b"] == pids["b"] {
		t.Errorf("changed server b kept pid %d", pids["b"])
	}
	if testproc.Alive(pids["b"]) {
		t.Errorf("changed server b's old process %d is still running", pids["b"])
	}
	if testproc.Alive(pids["c"]) {
		t.Errorf("removed server c's process %d is still running", pids["c"])
	}
	if got := r.pidTool("a"); got != pids["a"] {
		t.Errorf("a__pid answered %d, want %d", got, pids["a"])
	}
	if got := r.pidTool("b"); got != now["b"] {
		t.Errorf("b__pid answered %d, want %d", got, now["b"])
	}
	if got := r.pidTool("d"); got != now["d"] {
		t.Errorf("d__pid answered %d, want %d", got, now["d"])
	}
	after := r.loads()
	if after["no-crash"] != loads["no-crash"] {
		t.Errorf("unchanged plugin no-crash reloaded (load %d, was %d)", after["no-crash"], loads["no-crash"])
	}
	if after["titles"] == loads["titles"] {
		t.Errorf("plugin titles kept load %d though its config changed", loads["titles"])
	}
	tools, err := r.e.Host().Tools(context.Background(), abi.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.Name == "a__echo" && tool.Title != "Echo from A" {
			t.Errorf("a__echo's title is %q: the new titles config is not in effect", tool.Title)
		}
		if strings.HasPrefix(tool.Name, "c__") {
			t.Errorf("removed server c's tool %s still listed", tool.Name)
		}
	}

	t.Log("(c) only comments and layout change")
	loads, gen = after, r.e.Plugins().Generation()
	third := "# the same servers and policies, laid out anew\n\n" +
		strings.ReplaceAll(strings.ReplaceAll(second, "  ", "    "), "\n}\n", "\n}   # end\n\n")
	if third == second {
		t.Fatal("the edit changed nothing")
	}
	r.reload(third)
	r.expectStarts(map[string]int{"a": 1, "b": 2, "c": 1, "d": 1})
	if got := r.connected("a", "b", "d"); !maps.Equal(got, now) {
		t.Errorf("pids after a comment-only edit: %v, want %v", got, now)
	}
	if got := r.loads(); !maps.Equal(got, loads) {
		t.Errorf("plugin loads after a comment-only edit: %v, want %v", got, loads)
	}
	if g := r.e.Plugins().Generation(); g != gen {
		t.Errorf("plugin generation %d after a comment-only edit, want %d kept", g, gen)
	}
}

// TestReloadKeepsClientSession: a client connected over HTTP keeps its
// session, and a call in flight to one server finishes, across a reload
// that changes another server.
func TestReloadKeepsClientSession(t *testing.T) {
	t.Parallel()
	r := newReloadRig(t)
	r.start(r.server("a") + r.server("b") + denyPlugin)
	pids := r.connected("a", "b")

	srv := httptest.NewServer(r.e.Host().Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "reload-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	id := cs.ID()
	echo := func(text string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			t.Fatalf("a__echo: %v", err)
		}
		if res.IsError || resultText(res) != text {
			t.Fatalf("a__echo answered %q (error: %v), want %q", resultText(res), res.IsError, text)
		}
	}
	echo("before")

	// A call to a that is still running while b is replaced.
	slow := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__sleep", Arguments: map[string]any{"millis": 1000}})
		if err == nil && res.IsError {
			err = fmt.Errorf("a__sleep failed: %s", resultText(res))
		}
		slow <- err
	}()
	testproc.WaitFor(t, "a__sleep in flight", 10*time.Second, func() bool {
		for _, s := range r.e.Host().Statuses() {
			if s.Name == "a" && s.InFlight > 0 {
				return true
			}
		}
		return false
	})
	r.reload(r.server("a") + r.server("b", "-echo-description", "changed") + denyPlugin)
	if err := <-slow; err != nil {
		t.Errorf("the call in flight to a, across the reload: %v", err)
	}
	echo("after")
	if cs.ID() != id {
		t.Errorf("session id %q became %q", id, cs.ID())
	}
	now := r.connected("a", "b")
	if now["a"] != pids["a"] || now["b"] == pids["b"] {
		t.Errorf("pids %v after changing b, were %v: want a kept and b replaced", now, pids)
	}
	r.expectStarts(map[string]int{"a": 1, "b": 2})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{"text": "new b"}})
	if err != nil || res.IsError || resultText(res) != "new b" {
		t.Errorf("b__echo on the same session after the reload: %v %v", err, res)
	}
}
