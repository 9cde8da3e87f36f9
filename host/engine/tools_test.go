package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/internal/testproc"
	"github.com/mcphost-project/mcphost/plugins"
)

// Tool plugins, end to end: real .wasm built from
// host/toolplugin/testdata/guests, served through the engine over
// streamable HTTP to a go-sdk client.

var (
	toolGuestsOnce sync.Once
	toolGuests     map[string]string
	toolGuestsErr  error
)

// toolGuest returns the path of a built tool plugin test guest ("typed",
// "typed-v2", "raw"), built once per source hash and cached.
func toolGuest(t testing.TB, name string) string {
	t.Helper()
	toolGuestsOnce.Do(func() {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		toolGuests, toolGuestsErr = testproc.BuildWasm(filepath.Join(base, "mcphost-test", "toolguests"),
			[]string{"../toolplugin/testdata/guests/*/*.go", "../../abi/*.go", "../../abi/pdk/*.go", "../../abi/pdk/tool/*.go", "../../go.mod", "../../go.sum"},
			map[string]testproc.WasmGuest{
				"typed":    {Pkg: "../toolplugin/testdata/guests/typed"},
				"typed-v2": {Pkg: "../toolplugin/testdata/guests/typed", LDFlags: "-X main.buildVersion=v2"},
				"raw":      {Pkg: "../toolplugin/testdata/guests/raw"},
			})
	})
	testproc.NeedGuests(t, toolGuestsErr)
	return toolGuests[name]
}

// toolRig is an engine serving a config over HTTP, and a client of it.
type toolRig struct {
	*reloadRig
	srv    *httptest.Server
	cs     *mcp.ClientSession
	events chan string // "list_changed", "progress: ...", "log: ..."
}

func startToolRig(t *testing.T, text string, watch bool) *toolRig {
	t.Helper()
	r := &toolRig{reloadRig: newReloadRig(t), events: make(chan string, 1000)}
	text = strings.ReplaceAll(text, "DIR", r.dir)
	log := hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: testWriter{t}})
	e, err := engine.Start(context.Background(), r.load(text), &engine.Options{Logger: log, WatchPlugins: watch})
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	r.srv = httptest.NewServer(e.Host().Handler())
	t.Cleanup(func() {
		if r.cs != nil {
			r.cs.Close()
		}
		r.srv.Close()
		e.Close()
	})
	r.cs = r.connect(t)
	return r
}

func (r *toolRig) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "tool-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { r.note("list_changed") },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.note(fmt.Sprintf("progress: %v/%v %s", req.Params.Progress, req.Params.Total, req.Params.Message))
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(req.Params.Data)
			r.note(fmt.Sprintf("log: %s %s", req.Params.Level, b))
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (r *toolRig) note(s string) {
	select {
	case r.events <- s:
	default:
	}
}

func (r *toolRig) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func (r *toolRig) names(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	res, err := r.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		m[tl.Name] = tl
	}
	return m
}

func toolBlock(name, source, extra string) string {
	return fmt.Sprintf("tools_plugin %q {\n  source = %q\n%s\n}\n", name, source, extra)
}

// TestToolPluginThroughPolicies: a tool plugin's tools are named, listed,
// filtered, retitled, refused in plan mode and redacted exactly as an
// upstream's; its arguments and structured output are checked against its
// schemas; the caller reaches the guest; status and metrics show it.
func TestToolPluginThroughPolicies(t *testing.T) {
	t.Parallel()
	r := startToolRig(t, toolBlock("kit", toolGuest(t, "typed"), `  timeout = "5s"`)+`
plugin "plan" {
  source = "builtin:modes"
  config = { mode = "plan" }
}
plugin "no-sleep" {
  source = "builtin:deny"
  config = { tools = ["kit__sleep"] }
}
plugin "titles" {
  source = "builtin:titles"
  config = { overrides = { "kit__echo" = "Echo It" } }
}
plugin "redact" {
  source = "builtin:redact"
}
audit {
  file = "DIR/audit.jsonl"
}
`, false)
	tools := r.names(t)
	if tools["kit__echo"] == nil || tools["kit__echo"].Title != "Echo It" {
		t.Fatalf("kit__echo missing or not retitled: %v", tools)
	}
	for _, hidden := range []string{"kit__wipe", "kit__count", "kit__sleep"} {
		if tools[hidden] != nil {
			t.Errorf("%s is listed; plan mode or deny should hide it", hidden)
		}
	}
	if tools["kit__whoami"] == nil || tools["kit__echo"].OutputSchema == nil {
		t.Fatalf("want kit__whoami and echo's output schema: %v", tools)
	}

	res := r.call(t, "kit__echo", map[string]any{"text": "hi", "times": 2})
	if res.IsError || !strings.Contains(resultText(res), `"echo":"hi hi"`) {
		t.Fatalf("echo: %+v %s", res, resultText(res))
	}
	secret := "ghp_" + strings.Repeat("a", 36)
	if res := r.call(t, "kit__echo", map[string]any{"text": secret}); strings.Contains(resultText(res), secret) {
		t.Errorf("redact let the secret through: %s", resultText(res))
	}
	if res := r.call(t, "kit__wipe", map[string]any{}); !res.IsError || !strings.Contains(resultText(res), "plan") {
		t.Errorf("plan mode let a destructive plugin tool run: %s", resultText(res))
	}
	if res := r.call(t, "kit__whoami", map[string]any{}); !strings.Contains(resultText(res), "|tool-test") {
		t.Errorf("the guest did not see the caller: %s", resultText(res))
	}

	// Schemas: arguments before the guest, the tool's own field error.
	for _, c := range []struct {
		args       any
		field, msg string
	}{
		{map[string]any{}, "text", "required"},
		{map[string]any{"text": 5}, "text", "type"},
		{map[string]any{"text": "x", "times": "two"}, "times", "type"},
		{map[string]any{"text": "x", "times": 9}, "times", "between 1 and 3"},
	} {
		res := r.call(t, "kit__echo", c.args)
		txt := resultText(res)
		if !res.IsError || !strings.HasPrefix(txt, c.field+":") || !strings.Contains(txt, c.msg) {
			t.Errorf("echo %v: want an error naming %q with %q, got %v %q", c.args, c.field, c.msg, res.IsError, txt)
		}
	}

	var kit *plugins.Status
	for _, s := range r.e.ToolPlugins().Status() {
		if s.Name == "kit" {
			kit = &s
		}
	}
	if kit == nil || kit.Kind != plugins.KindTools || kit.Calls < 4 || len(kit.Tools) != 8 {
		t.Errorf("tool plugin status: %+v", kit)
	}
	var connected bool
	for _, st := range r.e.Host().Statuses() {
		connected = connected || st.Name == "kit" && st.Transport == "internal" && st.State == "connected" && st.Tools == 8
	}
	if !connected {
		t.Errorf("no connected internal server kit with 8 tools: %+v", r.e.Host().Statuses())
	}
	resp, err := http.Get(r.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, readAll(resp))
	if m := b.String(); !strings.Contains(m, `server="kit"`) || !strings.Contains(m, `tool="echo"`) {
		t.Errorf("metrics do not show the plugin's calls:\n%.2000s", m)
	}

	// The audit log has the plugin's calls as any server's, with the
	// policies' decisions: plan mode refusing the destructive one.
	var lines []audit.Entry
	testproc.WaitFor(t, "the audit lines of the plugin's calls", 10*time.Second, func() bool {
		raw, _ := os.ReadFile(filepath.Join(r.dir, "audit.jsonl"))
		lines = lines[:0]
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var e audit.Entry
			if json.Unmarshal([]byte(l), &e) == nil && e.Server == "kit" {
				lines = append(lines, e)
			}
		}
		return len(lines) >= 8
	})
	var okEcho, refusedWipe bool
	for _, e := range lines {
		okEcho = okEcho || e.Tool == "echo" && e.Outcome == "ok"
		for _, d := range e.Decisions {
			refusedWipe = refusedWipe || e.Tool == "wipe" && d.Plugin == "plan" && d.Action == "deny"
		}
	}
	if !okEcho || !refusedWipe {
		t.Errorf("audit lines of kit: echo ok %v, wipe refused by plan %v: %+v", okEcho, refusedWipe, lines)
	}
}

func readAll(resp *http.Response) string {
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}

// TestToolPluginMisbehaving: a tool that loops, allocates without end,
// crashes, answers in the wrong shape, answers 50 MB or breaks its output
// schema gives the client an error result, never a hung or failed call,
// and the plugin keeps serving; one that keeps crashing is backed off.
func TestToolPluginMisbehaving(t *testing.T) {
	t.Parallel()
	r := startToolRig(t, toolBlock("raw", toolGuest(t, "raw"), `  timeout = "300ms"
  memory = "32MiB"
  instances = 2`)+toolBlock("big", toolGuest(t, "raw"), `  timeout = "60s"
  memory = "256MiB"
  instances = 1`)+toolBlock("mem", toolGuest(t, "raw"), `  timeout = "60s"
  memory = "32MiB"
  instances = 1`), false)
	// Generous timeouts: under the race detector the host functions that
	// copy 50 MB out of the guest run far slower.
	if res := r.call(t, "mem__alloc", map[string]any{}); !res.IsError || !strings.Contains(resultText(res), "memory limit") {
		t.Errorf("alloc: want an error result with %q, got %v %q", "memory limit", res.IsError, resultText(res))
	}
	if raceEnabled {
		// 50 MB through Extism's store_u64, 8 bytes a host call, takes
		// minutes under the race detector; the plain run checks it.
		t.Log("skipping the 50 MB answer under the race detector")
	} else if res := r.call(t, "big__huge", map[string]any{}); !res.IsError || !strings.Contains(resultText(res), "output too large") {
		t.Errorf("huge: want an error result with %q, got %v %q", "output too large", res.IsError, resultText(res))
	}
	for _, c := range []struct{ tool, want string }{
		{"loop", "timed out"},
		{"shape", "invalid output"},
		{"deep", "nested deeper than"},
		{"fielderr", "path: no such file"},
		{"badout", "structuredContent.n"},
		{"crash", "crashed"},
	} {
		start := time.Now()
		res := r.call(t, "raw__"+c.tool, map[string]any{})
		if !res.IsError || !strings.Contains(resultText(res), c.want) {
			t.Errorf("%s: want an error result with %q, got %v %q", c.tool, c.want, res.IsError, resultText(res))
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %v", c.tool, d)
		}
	}
	if res := r.call(t, "raw__fielderr", map[string]any{}); !res.IsError || !strings.Contains(resultText(res), "no such file") {
		t.Errorf("the plugin does not serve after its failures: %q", resultText(res))
	}
	// Crashes in a row: the fifth marks it failed; calls then fail fast.
	for range plugins.CrashLimit {
		r.call(t, "raw__crash", map[string]any{})
	}
	if res := r.call(t, "raw__fielderr", map[string]any{}); !res.IsError || !strings.Contains(resultText(res), "repeated crashes") {
		t.Errorf("a crash-looping tool plugin is not backed off: %q", resultText(res))
	}
}

// TestToolPluginHTTPAndKV: HTTP goes to granted hosts only; the key-value
// store is the plugin's and survives a new version; progress and log
// messages reach the calling client.
func TestToolPluginHTTPAndKV(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello from "+req.URL.Path)
	}))
	defer web.Close()
	r := startToolRig(t, toolBlock("kit", toolGuest(t, "typed"), `  allowed_hosts = ["127.0.0.1"]
  kv = true
  progress = true
  client_log = true`), false)
	res := r.call(t, "kit__fetch", map[string]any{"url": web.URL + "/x"})
	if res.IsError || !strings.Contains(resultText(res), "hello from /x") {
		t.Fatalf("fetch from a granted host: %q", resultText(res))
	}
	other := strings.Replace(web.URL, "127.0.0.1", "localhost", 1)
	before := hits.Load()
	if res := r.call(t, "kit__fetch", map[string]any{"url": other + "/y"}); !res.IsError || !strings.HasPrefix(resultText(res), "refused by allowed_hosts: ") {
		t.Errorf("fetch from a host not granted: %q, want an error result \"refused by allowed_hosts: ...\"", resultText(res))
	}
	if hits.Load() != before {
		t.Error("the request to a host not granted reached the server")
	}
	for want := 1; want <= 2; want++ {
		if res := r.call(t, "kit__count", map[string]any{}); !strings.Contains(resultText(res), fmt.Sprintf(`"count":%d`, want)) {
			t.Fatalf("count: want %d, got %q", want, resultText(res))
		}
	}

	if err := r.cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	drain(r.events)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "kit__steps", Arguments: map[string]any{}}
	params.SetProgressToken("tok-1")
	if res, err := r.cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("steps: %v %v", err, res)
	}
	got := collect(r.events, 4, 5*time.Second)
	want := []string{"progress: 1/3 step 1", "progress: 2/3 step 2", "progress: 3/3 step 3", `log: info {"done":3}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notifications:\n got %q\nwant %q", got, want)
	}
}

// TestToolPluginGrantsOffByDefault: without grants, HTTP, the store,
// progress and logs are refused.
func TestToolPluginGrantsOffByDefault(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "no") }))
	defer web.Close()
	r := startToolRig(t, toolBlock("kit", toolGuest(t, "typed"), ""), false)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"fetch", map[string]any{"url": web.URL}}, {"count", map[string]any{}}} {
		if res := r.call(t, "kit__"+c.tool, c.args); !res.IsError {
			t.Errorf("%s without its grant: %q", c.tool, resultText(res))
		}
	}
	params := &mcp.CallToolParams{Name: "kit__steps", Arguments: map[string]any{}}
	params.SetProgressToken("t")
	if res, err := r.cs.CallTool(context.Background(), params); err != nil || !res.IsError {
		t.Errorf("progress without its grant: %v %v", err, res)
	}
}

// TestToolPluginCancel: a client that cancels stops the guest: the one
// instance is free for the next call at once.
func TestToolPluginCancel(t *testing.T) {
	t.Parallel()
	r := startToolRig(t, toolBlock("kit", toolGuest(t, "typed"), `  timeout = "30s"
  instances = 1`), false)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "kit__sleep", Arguments: map[string]any{"ms": 20000}})
	if err == nil {
		t.Fatal("a cancelled call answered")
	}
	res := r.call(t, "kit__echo", map[string]any{"text": "next"})
	if res.IsError || time.Since(start) > 5*time.Second {
		t.Fatalf("the next call waited for the cancelled guest: %v after %v", resultText(res), time.Since(start))
	}
}

// TestToolPluginSwapUnderLoad: replacing the .wasm while calls run swaps
// in the new version with no failed call; clients are told the tool list
// changed; a bad file keeps the running version.
func TestToolPluginSwapUnderLoad(t *testing.T) {
	t.Parallel()
	r0 := newReloadRig(t)
	path := filepath.Join(r0.dir, "kit.wasm")
	copyFile(t, toolGuest(t, "typed"), path)
	r := startToolRig(t, toolBlock("kit", path, `  instances = 2`), true)
	if r.names(t)["kit__added"] != nil {
		t.Fatal("v1 lists v2's tool")
	}
	var calls, failed atomic.Int64
	var v2 atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "kit__echo", Arguments: map[string]any{"text": "x"}})
				cancel()
				calls.Add(1)
				switch {
				case err != nil || res.IsError:
					failed.Add(1)
					t.Logf("failed call: %v %v", err, res)
				case strings.Contains(resultText(res), `"version":"v2"`):
					v2.Store(true)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	drain(r.events)
	atomicCopy(t, toolGuest(t, "typed-v2"), path)
	deadline := time.Now().Add(60 * time.Second)
	for !v2.Load() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !v2.Load() {
		t.Fatal("v2 never answered")
	}
	waitFor(t, r.events, "list_changed", 10*time.Second)
	if r.names(t)["kit__added"] == nil {
		t.Error("v2's tool is not listed after the swap")
	}
	// A bad file: the running version stays.
	if err := os.WriteFile(path+".tmp", []byte("\x00asm not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	// The watcher has seen it once the host's status counts the refusal.
	testproc.WaitFor(t, "the bad file to be refused", 10*time.Second, func() bool {
		resp, err := http.Get(r.srv.URL + "/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var doc gateway.StatusDocument
		if json.NewDecoder(resp.Body).Decode(&doc) != nil || doc.Reload == nil {
			return false
		}
		return doc.Reload.FailuresByTrigger["tool plugin files"] > 0
	})
	close(stop)
	wg.Wait()
	if res := r.call(t, "kit__echo", map[string]any{"text": "x"}); res.IsError || !strings.Contains(resultText(res), `"version":"v2"`) {
		t.Errorf("after a bad file: %q", resultText(res))
	}
	if failed.Load() != 0 {
		t.Errorf("%d of %d calls failed across the swap", failed.Load(), calls.Load())
	}
	t.Logf("%d calls across the swap, none failed", calls.Load())
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func atomicCopy(t *testing.T, from, to string) {
	t.Helper()
	copyFile(t, from, to+".tmp")
	if err := os.Rename(to+".tmp", to); err != nil {
		t.Fatal(err)
	}
}

func drain(ch chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func collect(ch chan string, n int, d time.Duration) []string {
	var out []string
	timeout := time.After(d)
	for len(out) < n {
		select {
		case s := <-ch:
			out = append(out, s)
		case <-timeout:
			return out
		}
	}
	return out
}

func waitFor(t *testing.T, ch chan string, want string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case s := <-ch:
			if s == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %q within %v", want, d)
		}
	}
}

// TestToolPluginKVInStore: with a store, a tool plugin's key-value store
// lives there and outlasts a restart.
func TestToolPluginKVInStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := toolBlock("kit", toolGuest(t, "typed"), "  kv = true") + fmt.Sprintf("store {\n  sqlite = %q\n}\n", filepath.Join(dir, "mcphost.db"))
	for run, want := range []int{2, 4} {
		r := startToolRig(t, text, false)
		for i := want - 1; i <= want; i++ {
			if res := r.call(t, "kit__count", map[string]any{}); !strings.Contains(resultText(res), fmt.Sprintf(`"count":%d`, i)) {
				t.Fatalf("run %d: want count %d, got %q", run, i, resultText(res))
			}
		}
		r.cs.Close()
		r.cs = nil
		r.srv.Close()
		r.e.Close()
	}
}

// TestToolPluginInPluginBlock: a tool plugin written in a plugin block is
// refused at load with where it belongs, instead of loading inert.
func TestToolPluginInPluginBlock(t *testing.T) {
	t.Parallel()
	r := newReloadRig(t)
	file := r.load(r.server("up") + fmt.Sprintf("plugin \"kit\" {\n  source = %q\n}\n", toolGuest(t, "typed")))
	_, err := engine.Start(context.Background(), file, nil)
	if err == nil || !strings.Contains(err.Error(), "tools_plugin block") {
		t.Fatalf("a tool plugin in a plugin block: %v, want a load error naming tools_plugin", err)
	}
}
