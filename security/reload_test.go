package security

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// The config the reload tests start from: up__echo is denied by a plugin
// that every later config keeps.
const (
	reloadServers = `
server "up" {
  command = "UPSTREAM"
}
server "up2" {
  command = "UPSTREAM"
}
`
	reloadPlugins = `
plugin "no-echo" {
  source = "builtin:deny"
  config = { tools = ["*__echo"] }
}
`
)

// hammerDenied calls up__echo without pause until stop is closed and
// counts the calls; any call that reaches the tool (its text comes back)
// is recorded in leaked.
type hammer struct {
	calls  atomic.Int64
	mu     sync.Mutex
	leaked []string
	done   chan struct{}
}

func hammerDenied(cs *mcp.ClientSession, tool string, stop <-chan struct{}) *hammer {
	h := &hammer{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "LEAKED"}})
			cancel()
			h.calls.Add(1)
			if err != nil {
				continue // an unknown tool: it did not reach the upstream either
			}
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok && strings.Contains(tc.Text, "LEAKED") {
					h.mu.Lock()
					h.leaked = append(h.leaked, tc.Text)
					h.mu.Unlock()
				}
			}
		}
	}()
	return h
}

func (h *hammer) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.leaked) > 0 {
		t.Errorf("%d of %d calls to a denied tool reached it during the reload: %q", len(h.leaked), h.calls.Load(), h.leaked[0])
	}
}

// waitCalls waits until n more calls have been made, so that each phase of
// a rewrite is seen by calls.
func (h *hammer) waitCalls(t *testing.T, n int64) {
	t.Helper()
	target := h.calls.Load() + n
	testproc.WaitFor(t, "calls during the rewrite", time.Minute, func() bool { return h.calls.Load() >= target })
}

// reaches calls tool with text LEAKED and reports whether the call reached
// it: a hidden tool (unknown) and a denial both do not.
func reaches(t *testing.T, cs *mcp.ClientSession, tool string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "LEAKED"}})
	if err != nil {
		return false
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && strings.Contains(tc.Text, "LEAKED") {
			return true
		}
	}
	return false
}

func hasTool(t *testing.T, cs *mcp.ClientSession, name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tool := range res.Tools {
		if tool.Name == name {
			return true
		}
	}
	return false
}

// TestReloadTwoStepWrite rewrites the config through one open file, servers
// first and the plugin blocks two seconds later, as `{ cat servers; sleep
// 2; cat plugins; } > config.hcl` does, while a client calls a denied tool
// without pause. No call may reach it: the watcher waits for the writer to
// close the file and for the file to settle, and the reload swaps the
// plugins in together with the new servers.
func TestReloadTwoStepWrite(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
server "up" {
  command = "UPSTREAM"
}
`+reloadPlugins)
	s := startServer(t, cfg)
	cs := connect(t, s.URL, nil)
	if reaches(t, cs, "up__echo") {
		t.Fatal("up__echo reached before the rewrite; want it denied")
	}
	stop := make(chan struct{})
	h := hammerDenied(cs, "up__echo", stop)
	defer func() { close(stop); <-h.done }()
	h.waitCalls(t, 5)

	f, err := os.OpenFile(cfg, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.ReplaceAll(reloadServers, "UPSTREAM", upstreamBin)); err != nil {
		t.Fatal(err)
	}
	// The writer pauses between its two steps, as the reported one did:
	// the pause is the attack, not what the test waits on.
	time.Sleep(2 * time.Second)
	h.waitCalls(t, 5)
	if _, err := f.WriteString(reloadPlugins); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The new config adds up2; once its tools show, the reload is done.
	testproc.WaitFor(t, "the rewritten config to be served", time.Minute, func() bool { return hasTool(t, cs, "up2__pid") })
	h.waitCalls(t, 5)
	close(stop)
	<-h.done
	stop = make(chan struct{}) // for the deferred close
	h.check(t)
	if strings.Contains(s.stderr.String(), "reloaded: servers=2 plugins=0") {
		t.Errorf("the half-written config was loaded:\n%s", s.stderr.String())
	}
}

// TestReloadTwoSeparateWrites rewrites the config in two separate writes,
// each opening and closing the file (`cat servers > config.hcl; cat
// plugins >> config.hcl`), 100 ms apart, while a client calls a denied
// tool without pause. The first write alone is a valid config with no
// plugin block: read between the writes, it would serve without the deny
// policy. No process holds the file open in between, so only the settle
// window (runtime.watch_settle) keeps the reload from reading it: the one
// reload applies the whole content, plugins included.
func TestReloadTwoSeparateWrites(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
server "up" {
  command = "UPSTREAM"
}
`+reloadPlugins)
	s := startServer(t, cfg)
	cs := connect(t, s.URL, nil)
	if reaches(t, cs, "up__echo") {
		t.Fatal("up__echo reached before the rewrite; want it denied")
	}
	stop := make(chan struct{})
	h := hammerDenied(cs, "up__echo", stop)
	defer func() { close(stop); <-h.done }()
	h.waitCalls(t, 5)

	write := func(flag int, text string) {
		f, err := os.OpenFile(cfg, os.O_WRONLY|flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write(os.O_TRUNC, strings.ReplaceAll(reloadServers, "UPSTREAM", upstreamBin))
	// The writer's pause between its writes is the attack, not a wait.
	time.Sleep(100 * time.Millisecond)
	write(os.O_APPEND, reloadPlugins)

	// The new config adds up2; once its tools show, the reload is done.
	testproc.WaitFor(t, "the rewritten config to be served", time.Minute, func() bool { return hasTool(t, cs, "up2__pid") })
	h.waitCalls(t, 5)
	close(stop)
	<-h.done
	stop = make(chan struct{}) // for the deferred close
	h.check(t)
	log := s.stderr.String()
	if strings.Contains(log, "reloaded: servers=2 plugins=0") {
		t.Errorf("the config was reloaded between its two writes, without its plugin block:\n%s", log)
	}
	if n := strings.Count(log, "reloaded: "); n != 1 {
		t.Errorf("%d reloads after a rewrite in two writes 100 ms apart; want 1, of the whole content:\n%s", n, log)
	}
	if reaches(t, cs, "up2__echo") {
		t.Error("up2__echo reached after the rewrite; want it denied")
	}
}

// TestReloadEmptyFileKeepsConfig truncates the config to nothing (what a
// writer leaves before it writes): the reload is refused with a clear
// error and the old servers and policies keep serving. A config written
// by rename afterwards is picked up.
func TestReloadEmptyFileKeepsConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
server "up" {
  command = "UPSTREAM"
}
`+reloadPlugins)
	s := startServer(t, cfg)
	cs := connect(t, s.URL, nil)

	for _, empty := range []string{"", "\n   \n", "# nothing yet\n"} {
		before := strings.Count(s.stderr.String(), "Empty config file")
		if err := os.WriteFile(cfg, []byte(empty), 0o644); err != nil {
			t.Fatal(err)
		}
		testproc.WaitFor(t, "the empty config to be refused", time.Minute, func() bool {
			return strings.Count(s.stderr.String(), "Empty config file") > before
		})
		if text, isErr := callText(t, cs, "up__pid", nil); isErr {
			t.Fatalf("up__pid after an empty config = %q (error); want the old config serving", text)
		}
		if reaches(t, cs, "up__echo") {
			t.Fatal("up__echo reached after an empty config; want the old policies' denial")
		}
	}

	// The documented way to write a config: a whole file renamed over it.
	tmp := filepath.Join(dir, ".config.hcl.tmp")
	if err := os.WriteFile(tmp, []byte(strings.ReplaceAll(reloadServers, "UPSTREAM", upstreamBin)+reloadPlugins), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cfg); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, "the renamed config to be served", time.Minute, func() bool { return hasTool(t, cs, "up2__pid") })
	if reaches(t, cs, "up2__echo") {
		t.Fatal("up2__echo reached after the rename; want it denied")
	}
}
