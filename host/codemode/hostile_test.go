package codemode

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

// Scripts that try to escape or exhaust the sandbox: each must end with
// an error that says why, within its limits, and leave the engine usable.
func TestHostileScripts(t *testing.T) {
	// Scripts the clock must stop get a short limit; the others a long
	// one, so that they fail for their own reason on a loaded machine.
	short := newEngine(t, Limits{Timeout: 2 * time.Second, Memory: 32 << 20, MaxCalls: 3})
	long := newEngine(t, Limits{Timeout: time.Minute, Memory: 32 << 20, MaxCalls: 3})
	never := func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		t.Errorf("tool %q called", name)
		return nil, nil
	}
	cases := []struct {
		name, script string
		want         string // in Outcome.Err
		stopped      bool
	}{
		{"infinite loop", `for (;;) {}`, "time limit (2s)", true},
		{"busy recursion", `function f(n) { return n < 2 ? n : f(n-1) + f(n-2) } return f(60)`, "time limit", true},
		{"unbounded recursion", `function f() { return f() + 1 } return f()`, "InternalError: stack overflow", false},
		{"memory bomb", `const a = []; for (;;) a.push(new Array(1e6).fill(1.5))`, "out of memory", false},
		{"string doubling", `let s = "x"; for (;;) s = s + s`, "InternalError: string too long", false},
		{"string bomb", `const a = []; for (let i = 0; ; i++) a.push("x".repeat(1 << 20) + i)`, "out of memory", false},
		{"one huge string", `return "x".repeat(1 << 29).length`, "out of memory", false},
		{"array buffer bomb", `const a = []; for (;;) a.push(new ArrayBuffer(16 << 20))`, "out of memory", false},
		{"fetch", `return await fetch("http://127.0.0.1:1/")`, "ReferenceError: 'fetch' is not defined", false},
		{"require", `return require("fs").readFileSync("/etc/passwd", "utf8")`, "ReferenceError: 'require' is not defined", false},
		{"std module", `return std.loadFile("/etc/passwd")`, "ReferenceError: 'std' is not defined", false},
		{"os module", `return os.exec(["/bin/sh", "-c", "id"])`, "ReferenceError: 'os' is not defined", false},
		{"dynamic import", `const fs = await import("fs"); return fs`, "could not load module", false},
		{"import std", `const s = await import("std"); return s.getenv("HOME")`, "could not load module", false},
		{"process", `return process.env`, "ReferenceError: 'process' is not defined", false},
		{"WebAssembly", `return WebAssembly.Module`, "ReferenceError: 'WebAssembly' is not defined", false},
		{"timers", `await new Promise((r) => setTimeout(r, 10)); return 1`, "ReferenceError: 'setTimeout' is not defined", false},
		{"never settles", `await new Promise(() => {}); return 1`, "did not finish", false},
		{"host call taken away", `return typeof __mcphost_call`, "", false},
		{"syntax error", `return )(`, "SyntaxError", false},
		{"huge value", `return "x".repeat(300000)`, "more than the 262144 a run may answer", false},
		{"call without tools", `return callTool("a", {})`, "ToolError: this run has no tools", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			e := long
			if c.stopped {
				e = short
			}
			call := never
			if c.name == "call without tools" {
				call = nil
			}
			out, err := e.Run(context.Background(), c.script, []string{"a"}, call)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if out.Err != "" || string(out.Value) != `"undefined"` {
					t.Fatalf("value %s, error %q; want \"undefined\"", out.Value, out.Err)
				}
				return
			}
			if !strings.Contains(out.Err, c.want) {
				t.Fatalf("error %.300q (value %s), want it to say %q", out.Err, out.Value, c.want)
			}
			if len(out.Err) > maxErrText+len(" [cut]") {
				t.Errorf("error is %d bytes", len(out.Err))
			}
			if out.Stopped != c.stopped {
				t.Errorf("stopped %v, want %v", out.Stopped, c.stopped)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
	// The engine still runs scripts, and the host's memory is back.
	out, err := long.Run(context.Background(), `return 6 * 7`, nil, never)
	if err != nil || string(out.Value) != "42" {
		t.Fatalf("after the attacks: %v %+v", err, out)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > 512<<20 {
		t.Errorf("host heap in use %d MiB after the attacks", ms.HeapInuse>>20)
	}
}

// TestMaxCalls: past MaxCalls a tool call throws, and the calls before it
// went through.
func TestMaxCalls(t *testing.T) {
	e := newEngine(t, Limits{Timeout: 5 * time.Second, MaxCalls: 3})
	var called []string
	out, err := e.Run(context.Background(), `for (let i = 0; i < 10; i++) tools.a({i})`, []string{"a"}, echoCalls(&called))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Err, "too many tool calls: a script may make 3") || len(called) != 3 {
		t.Fatalf("error %q after %d calls", out.Err, len(called))
	}
}

// TestTimeoutCancelsCall: the time limit reaches a tool call in flight
// through its context.
func TestTimeoutCancelsCall(t *testing.T) {
	e := newEngine(t, Limits{Timeout: 300 * time.Millisecond})
	cancelled := make(chan struct{})
	out, err := e.Run(context.Background(), `tools.slow({}); return 1`, []string{"slow"}, func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-cancelled
	if !strings.Contains(out.Err, "time limit") || !out.Stopped {
		t.Fatalf("outcome %+v", out)
	}
}

// TestGuestImports: the guest can reach the host only through what it
// imports, and it imports the host's three functions and four WASI
// functions implemented here (no file system, environment, sockets or
// randomness): a new import fails this test until it is reviewed.
func TestGuestImports(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, guestWasm)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		got = append(got, mod+"."+name)
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		got = append(got, "memory "+mod+"."+name)
	}
	slices.Sort(got)
	want := []string{"mcphost.call_tool", "mcphost.done", "mcphost.take_answer",
		"wasi_snapshot_preview1.clock_time_get", "wasi_snapshot_preview1.fd_close",
		"wasi_snapshot_preview1.fd_seek", "wasi_snapshot_preview1.fd_write"}
	if !slices.Equal(got, want) {
		t.Fatalf("imports %q, want %q", got, want)
	}
}

// TestMaxRunning: past MaxRunning runs at once, a run waits for a slot
// and, when none frees before its deadline, is not started.
func TestMaxRunning(t *testing.T) {
	e := newEngine(t, Limits{Timeout: time.Minute, MaxRunning: 1})
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan *Outcome)
	go func() {
		out, _ := e.Run(context.Background(), `return tools.hold({})`, []string{"hold"}, func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
			close(started)
			<-release
			return json.RawMessage(`{"content":[{"type":"text","text":"held"}]}`), nil
		})
		first <- out
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	out, err := e.Run(ctx, `return 1`, nil, nil)
	if err != nil || !strings.Contains(out.Err, "was not started: 1 scripts were running") {
		t.Fatalf("second run: %v %+v", err, out)
	}
	close(release)
	if out := <-first; string(out.Value) != `"held"` {
		t.Fatalf("first run: %+v", out)
	}
	if out, err := e.Run(context.Background(), `return 2`, nil, nil); err != nil || string(out.Value) != "2" {
		t.Fatalf("after the first: %v %+v", err, out)
	}
}

// TestRunLogsAndClock: console lines past MaxOutput are dropped and said
// so; the guest's clocks tick.
func TestRunLogsAndClock(t *testing.T) {
	e := newEngine(t, Limits{Timeout: time.Minute, MaxOutput: 4096})
	out, err := e.Run(context.Background(), `for (let i = 0; i < 1000; i++) console.log("line", i); const t0 = Date.now(); return t0 > 1.7e12`, nil, nil)
	if err != nil || out.Err != "" || string(out.Value) != "true" {
		t.Fatalf("%v %+v", err, out)
	}
	if !out.Truncated || len(out.Logs) == 0 || len(out.Logs) > 4096/len("line 0") || !strings.Contains(out.Text(), "[more console output was dropped]") {
		t.Fatalf("%d lines, truncated %v", len(out.Logs), out.Truncated)
	}
}
