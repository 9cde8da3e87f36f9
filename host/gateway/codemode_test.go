package gateway

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/plugins"
)

// codeModeHost starts a host in code mode over two real upstream
// processes, a and b, under the built-in deny policy (b__pid), with an
// audit log, and connects a client over loopback HTTP.
func codeModeHost(t *testing.T, lim codemode.Limits) (*Host, *mcp.ClientSession, *auditRecorder) {
	t.Helper()
	ctx := context.Background()
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: t.TempDir(), Builtin: filters.Builtin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	mgr, err := plugins.NewManager(rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close(ctx) })
	if err := mgr.Reload(ctx, []plugins.Spec{{Name: "no-pid", Source: "builtin:deny", Config: map[string]string{"tools": `["b__pid"]`}}}); err != nil {
		t.Fatal(err)
	}
	rec := &auditRecorder{}
	h := startHost(t, Config{
		Servers: []upstream.ServerConfig{stdioServer("a"), stdioServer("b")},
		Tools:   catalog.ToolsConfig{Exposure: catalog.ExposureCode},
		Code:    lim,
	}, &Options{Policy: mgr, Audit: &AuditOptions{Log: rec, Arguments: true}})
	return h, connectHTTP(t, h, nil), rec
}

// runCode calls run_code over the client session and returns its text.
func runCode(t *testing.T, cs *mcp.ClientSession, script string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: codemode.ToolName, Arguments: map[string]any{"code": script}})
	if err != nil {
		t.Fatal(err)
	}
	return text(t, res), res.IsError
}

// TestCodeModeChainsTools: tools/list holds run_code alone, declaring the
// caller's tools (not the one the policy hides); a script that chains
// three tools of two servers returns only what it computes; each inner
// call has its audit line, as the client's own would.
func TestCodeModeChainsTools(t *testing.T) {
	_, cs, rec := codeModeHost(t, codemode.Limits{Timeout: time.Minute})
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != codemode.ToolName {
		t.Fatalf("tools/list: %d tools, first %q; want run_code alone", len(list.Tools), list.Tools[0].Name)
	}
	desc := list.Tools[0].Description
	if !strings.Contains(desc, "a__echo(args") || !strings.Contains(desc, "b__structured_key(args") || strings.Contains(desc, "b__pid") {
		t.Errorf("run_code's declarations:\n%s", desc)
	}

	got, isErr := runCode(t, cs, `
		const one = tools.a__echo({text: "one"});
		const two = tools.b__echo({text: one + "+two"});
		const three = tools.a__structured_key({text: two});
		console.log("keys", Object.keys(three).length);
		return {two, keys: Object.keys(three).sort()};`)
	if isErr || !strings.HasPrefix(got, `{"two":"one+two","keys":["nested","one+two"]}`) || !strings.Contains(got, "console:\nkeys 2\n") {
		t.Fatalf("run_code answered (error %v):\n%s", isErr, got)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	var names []string
	for _, e := range rec.entries {
		names = append(names, e.Name+" "+e.Server+"/"+e.Tool+" "+e.Outcome)
	}
	want := []string{"a__echo a/echo ok", "b__echo b/echo ok", "a__structured_key a/structured_key ok", "run_code / ok"}
	if !slices.Equal(names, want) {
		t.Fatalf("audit lines:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	if a := string(rec.entries[1].Arguments); a != `{"text":"one+two"}` {
		t.Errorf("b__echo's audited arguments %s", a)
	}
	for _, e := range rec.entries {
		if !reflect.DeepEqual(e.Caller, rec.entries[3].Caller) || e.Caller.Session == "" {
			t.Errorf("entry %s: caller %+v, want run_code's %+v", e.Name, e.Caller, rec.entries[3].Caller)
		}
	}
}

// TestCodeModeDenied: a tool the policy denies is refused inside a script
// with the policy's reason, and the refusal has its audit line with the
// policy's decision; the script goes on, and may throw it.
func TestCodeModeDenied(t *testing.T) {
	_, cs, rec := codeModeHost(t, codemode.Limits{Timeout: time.Minute})
	got, isErr := runCode(t, cs, `
		const r = callTool("b__pid", {});
		if (r.isError) throw new Error(r.content[0].text);
		return r;`)
	const reason = `call to b__pid denied: policy "no-pid": b__pid is blocked by the gateway's deny policy (tools pattern "b__pid")`
	if !isErr || !strings.HasPrefix(got, "Error: "+reason) {
		t.Fatalf("run_code answered (error %v):\n%s", isErr, got)
	}
	got, isErr = runCode(t, cs, `return typeof tools.b__pid + " " + typeof tools.a__pid`)
	if isErr || got != `"undefined function"` {
		t.Fatalf("tools seen: %s", got)
	}
	e := findAudit(t, rec, "b__pid")
	if e.Outcome != CallDenied || len(e.Decisions) == 0 || e.Decisions[0].Plugin != "no-pid" || e.Decisions[0].Action != abi.ActionDeny {
		t.Fatalf("b__pid's audit line: %+v", e)
	}
}

func findAudit(t *testing.T, rec *auditRecorder, name string) *audit.Entry {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range rec.entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no audit line for %s", name)
	return nil
}

// TestCodeModeLimits: through the gateway, a script that loops forever
// ends at its time limit with an error result, one that calls run_code
// is refused, arguments that are not a script are invalid params, and the
// caller's tools stay callable by name.
func TestCodeModeLimits(t *testing.T) {
	h, cs, _ := codeModeHost(t, codemode.Limits{Timeout: 2 * time.Second})
	got, isErr := runCode(t, cs, `for (;;) {}`)
	if !isErr || !strings.Contains(got, "time limit (2s)") {
		t.Fatalf("loop: %v %s", isErr, got)
	}
	got, isErr = runCode(t, cs, `return callTool("run_code", {code: "return 1"})`)
	if !isErr || !strings.Contains(got, "run_code cannot call itself") {
		t.Fatalf("recursion: %v %s", isErr, got)
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: codemode.ToolName, Arguments: map[string]any{"script": "return 1"}})
	if err == nil || !strings.Contains(err.Error(), `unknown field "script"`) {
		t.Fatalf("bad arguments: %v", err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "direct"}})
	if err != nil || text(t, res) != "direct" {
		t.Fatalf("direct call: %v %v", err, res)
	}
	// Embedders' CallTool takes the same path.
	r, err := h.CallTool(context.Background(), abi.Caller{}, codemode.ToolName, json.RawMessage(`{"code":"return tools.a__echo({text: \"embedded\"})"}`))
	if err != nil || r.IsError || text(t, r) != `"embedded"` {
		t.Fatalf("embedded run_code: %v %+v", err, r)
	}
}

// TestCodeModeTokens measures what a task of several steps costs a
// model's context as plain calls and as one run_code, over real
// upstreams: a note store (the memory stand-in, which answers every
// write with all it holds) and a plain server. The task: add three
// notes, then say how many notes there are. Bytes counted are what the
// model reads (the listing, each result) and writes (each call's name
// and arguments); tokens are estimated as bytes/4. docs/BENCHMARKS.md
// records the figures.
func TestCodeModeTokens(t *testing.T) {
	mem := t.TempDir() + "/memory.txt"
	var seed strings.Builder
	for i := range 40 {
		seed.WriteString("note " + strings.Repeat("x", 60) + " #" + string(rune('0'+i%10)) + "\n")
	}
	if err := os.WriteFile(mem, []byte(seed.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	notes := stdioServer("notes", "-memory")
	notes.Env = map[string]string{"MEMORY_FILE_PATH": mem}
	servers := []upstream.ServerConfig{notes, stdioServer("a")}
	ctx := context.Background()
	size := func(v any) int {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}

	plain := connectHTTP(t, startHost(t, Config{Servers: servers}, nil), nil)
	list, err := plain.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	plainList, plainTools, plainSteps := size(list), len(list.Tools), 0
	var count int
	for _, note := range []string{"buy milk", "call Ann", "file taxes"} {
		args := map[string]any{"text": note}
		res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "notes__remember", Arguments: args})
		if err != nil || res.IsError {
			t.Fatal(err, res)
		}
		plainSteps += len("notes__remember") + size(args) + size(res.Content)
		count = strings.Count(text(t, res), "\n")
	}

	os.WriteFile(mem, []byte(seed.String()), 0o600)
	code := connectHTTP(t, startHost(t, Config{Servers: servers, Tools: catalog.ToolsConfig{Exposure: catalog.ExposureCode}}, nil), nil)
	list, err = code.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	codeList := size(list)
	script := `let all = ""; for (const text of ["buy milk", "call Ann", "file taxes"]) all = tools.notes__remember({text}); return all.split("\n").filter(Boolean).length;`
	args := map[string]any{"code": script}
	res, err := code.CallTool(ctx, &mcp.CallToolParams{Name: codemode.ToolName, Arguments: args})
	if err != nil || res.IsError {
		t.Fatal(err, text(t, res))
	}
	if got := text(t, res); got != strconv.Itoa(count) {
		t.Fatalf("code mode counted %s notes, plain calls %d", got, count)
	}
	codeSteps := len(codemode.ToolName) + size(args) + size(res.Content)
	t.Logf("listing: plain %d bytes (%d tools), code mode %d bytes (run_code)", plainList, plainTools, codeList)
	t.Logf("task (3 writes, then a count): plain calls %d bytes ≈ %d tokens (bytes/4) in 3 round trips; code mode %d bytes ≈ %d tokens in 1", plainSteps, plainSteps/4, codeSteps, codeSteps/4)
	if codeSteps >= plainSteps {
		t.Errorf("code mode's task cost %d bytes, plain calls %d", codeSteps, plainSteps)
	}
}

// TestCodeModeReload: a reload that turns code mode on or off, or changes
// its limits, changes every caller's listing with the catalog unchanged,
// and tells clients.
func TestCodeModeReload(t *testing.T) {
	cfg := Config{Servers: []upstream.ServerConfig{stdioServer("a")}}
	h := startHost(t, cfg, nil)
	changed := make(chan struct{}, 8)
	cs := connectHTTP(t, h, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx := context.Background()
	names := func() []string {
		t.Helper()
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, tool := range list.Tools {
			n = append(n, tool.Name)
		}
		return n
	}
	if n := names(); len(n) < 2 || slices.Contains(n, codemode.ToolName) {
		t.Fatalf("before: %v", n)
	}
	reload := func(cfg Config) {
		t.Helper()
		for len(changed) > 0 {
			<-changed
		}
		if err := h.Reconfigure(ctx, cfg, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no tools/list_changed after the reload")
		}
	}
	cfg.Tools.Exposure = catalog.ExposureCode
	reload(cfg)
	if n := names(); !slices.Equal(n, []string{codemode.ToolName}) {
		t.Fatalf("code mode on: %v", n)
	}
	cfg.Code.MaxCalls = 7
	reload(cfg)
	list, err := cs.ListTools(ctx, nil)
	if err != nil || !strings.Contains(list.Tools[0].Description, "7 tool calls per program") {
		t.Fatalf("new limits: %v %v", err, list)
	}
	got, isErr := runCode(t, cs, `return tools.a__echo({text: "after reload"})`)
	if isErr || got != `"after reload"` {
		t.Fatalf("run_code after the reload: %s", got)
	}
	cfg.Tools.Exposure = catalog.ExposureList
	reload(cfg)
	if n := names(); len(n) < 2 || slices.Contains(n, codemode.ToolName) {
		t.Fatalf("code mode off: %v", n)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: codemode.ToolName, Arguments: map[string]any{"code": "return 1"}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("run_code without code mode: %v", err)
	}
}
