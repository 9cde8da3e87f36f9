//go:build !mcphost_extism

package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/plugins/internal/extismhost"
	"github.com/mcphost-project/mcphost/plugins/internal/wasmrewrite"
	"github.com/mcphost-project/mcphost/plugins/internal/wasmrewrite/wasmtest"
)

// TestInstrumentStopsLoop: an instrumented endless loop, compiled without
// close on context done, stops with wazero's own exit codes when the
// context's deadline passes or it is cancelled, through the real length.
func TestInstrumentStopsLoop(t *testing.T) {
	w := wasmtest.Name
	wasm := wasmtest.Module(
		wasmtest.Section(1, 2, []byte{0x60, 1, 0x7E, 1, 0x7E}, []byte{0x60, 0, 1, 0x7F}), // (i64) -> i64, () -> i32
		wasmtest.Section(2, 1, wasmtest.Cat(w("extism:host/env"), w("length"), []byte{0x00, 0})),
		wasmtest.Section(3, 1, []byte{1}),
		wasmtest.Section(7, 1, wasmtest.Cat(w("run"), []byte{0x00, 0x01})),
		wasmtest.Section(10, 1, wasmtest.Body([]byte{0}, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x41, 0x00, 0x0B)), // loop forever
	)
	out, err := wasmrewrite.Instrument(wasm, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(false))
	defer r.Close(ctx)
	if err := extismhost.Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	cm, err := r.CompileModule(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		code uint32
	}{
		{"deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 50*time.Millisecond) },
			sys.ExitCodeDeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			cctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(50*time.Millisecond, cancel)
			return cctx, cancel
		}, sys.ExitCodeContextCanceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				t.Fatal(err)
			}
			cctx, cancel := c.ctx()
			defer cancel()
			start := time.Now()
			_, err = m.ExportedFunction("run").Call(cctx)
			var exit *sys.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != c.code {
				t.Fatalf("err = %v", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("stopped after %v", d)
			}
			if !m.IsClosed() {
				t.Error("module not closed")
			}
		})
	}
}

// TestGuestsInstrumented: the guests this project ships or tests with are
// all understood by the rewriter, so they run in the fast mode.
func TestGuestsInstrumented(t *testing.T) {
	t.Parallel()
	for _, path := range append([]string{guest(t, "policy"), guest(t, "describeonly"), "../filters/builtin.wasm"}, asGuests()...) {
		wasm, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wasmrewrite.Instrument(wasm, true); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	rt := newRuntime(t, RuntimeOptions{})
	if p := load(t, rt, policy(t, "p")); !p.mod.cm.instrumented {
		t.Error("policy guest not instrumented")
	}
	rt = newRuntime(t, RuntimeOptions{CloseOnContextDone: true})
	if p := load(t, rt, policy(t, "p")); p.mod.cm.instrumented {
		t.Error("policy guest instrumented with CloseOnContextDone")
	}
}

// asGuests returns AssemblyScript builds of examples/plugins/as-tool-budget
// left in the test cache by its tests, if any.
func asGuests() []string {
	base, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(base, "mcphost-test", "as-tool-budget", "*", "tool-budget.wasm"))
	return paths
}

// TestLoopTimeoutModes: in both modes, compiled and interpreted
// (RuntimeOptions.Interpreter), a looping guest times out on time,
// the host keeps running, and cancellation is reported as such.
func TestLoopTimeoutModes(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts RuntimeOptions
	}{{"instrumented", RuntimeOptions{}}, {"closeondone", RuntimeOptions{CloseOnContextDone: true}},
		{"interpreter", RuntimeOptions{Interpreter: true}}, {"interpreter-closeondone", RuntimeOptions{Interpreter: true, CloseOnContextDone: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.opts.Interpreter && raceEnabled {
				t.Skip("the interpreter under the race detector runs even a plain call past the 100 ms limit")
			}
			rt := newRuntime(t, mode.opts)
			spec := policy(t, "looper")
			spec.Timeout = 100 * time.Millisecond
			p := load(t, rt, spec)
			ticks := hostTicks(t)
			start := time.Now()
			_, err := callMode(p, "loop")
			d := time.Since(start)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("loop: %v", err)
			}
			if d < spec.Timeout || d > spec.Timeout+250*time.Millisecond {
				t.Errorf("timed out after %v", d)
			}
			if n := ticks.Load(); n < 10 {
				t.Errorf("host goroutine ticked %d times during the loop", n)
			}

			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(30*time.Millisecond, cancel)
			in, _ := json.Marshal(abi.ToolCallInput{Server: "a", Tool: "t", Arguments: json.RawMessage(`{"_mode":"loop"}`)})
			_, err = p.Call(ctx, abi.HookToolCall, in)
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
				t.Fatalf("cancelled loop: %v", err)
			}
			mustRecover(t, p)
		})
	}
}

// TestInstrumentDifferential: the same guests, instrumented and not, give
// the same outputs and errors for the same calls.
func TestInstrumentDifferential(t *testing.T) {
	if raceEnabled {
		// The original module, without the loop countdown, runs its
		// 50 MB output past the 5 s timeout under the race detector.
		t.Skip("compares outcomes that include timeouts, which the race detector's slowdown changes")
	}
	type call struct {
		hook  string
		input []byte
	}
	toolCall := func(mode string) call {
		in, _ := json.Marshal(abi.ToolCallInput{Caller: abi.Caller{SessionID: "s", Transport: "stdio"}, Name: "fs__write", Server: "fs",
			Tool: "write", Arguments: json.RawMessage(`{"_mode":"` + mode + `","path":"/etc/passwd","content":"x"}`)})
		return call{abi.HookToolCall, in}
	}
	list, _ := json.Marshal(abi.ToolsListInput{Tools: benchTools(300)})
	result, _ := json.Marshal(abi.ToolResultInput{Name: "fs__read", Server: "fs", Tool: "read", Arguments: json.RawMessage(`{"path":"/x"}`),
		Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: "hello, token=abc123 and ghp_0123456789abcdefghij0123456789abcdef"}}}})
	calls := []call{{abi.HookToolsList, list}, {abi.HookToolResult, result}, toolCall("")}
	for _, m := range []string{"allow", "deny", "rewrite", "rewrite-bad", "respond", "respond-null", "badaction", "panic",
		"exit", "badjson", "big", "error", "empty", "null", "badcontent", "passthrough"} {
		calls = append(calls, toolCall(m))
	}

	type plugin struct {
		name   string
		source string
		config map[string]string
	}
	plugins := []plugin{
		{"policy", guest(t, "policy"), map[string]string{"name": "p"}},
		{"renamer", guest(t, "policy"), map[string]string{"name": "renamer", "prefix": "x_", "drop": "tool7"}},
		{"tagger", guest(t, "policy"), map[string]string{"name": "tagger"}},
	}
	for _, name := range []string{"allow", "deny", "redact", "truncate", "modes", "mentions", "arguments", "titles", "json_results", "describe", "pin"} {
		plugins = append(plugins, plugin{"builtin-" + name, "../filters/builtin.wasm",
			map[string]string{"mcphost.builtin": name, "allow": "fs__*", "deny": "fs__write", "max_bytes": "40", "tools": "fs__*"}})
	}
	for _, path := range asGuests() {
		plugins = append(plugins, plugin{"as-tool-budget", path, map[string]string{"max_calls": "2"}})
	}

	run := func(opts RuntimeOptions, pl plugin) []string {
		rt := newRuntime(t, opts)
		p, err := rt.Load(context.Background(), Spec{Name: pl.name, Source: pl.source, Config: pl.config, Instances: 1, Timeout: 5 * time.Second})
		if err != nil {
			return []string{"load: " + err.Error()}
		}
		defer p.Close(context.Background())
		var res []string
		for _, c := range calls {
			for range 2 { // twice: state kept across calls must match too
				out, err := p.Call(context.Background(), c.hook, c.input)
				res = append(res, fmt.Sprintf("%s: %q %v", c.hook, out, err))
			}
		}
		return res
	}
	for _, pl := range plugins {
		t.Run(pl.name, func(t *testing.T) {
			inst := run(RuntimeOptions{}, pl)
			orig := run(RuntimeOptions{CloseOnContextDone: true}, pl)
			if len(inst) != len(orig) {
				t.Fatalf("instrumented %q\noriginal %q", inst, orig)
			}
			for i := range inst {
				if inst[i] != orig[i] {
					t.Errorf("call %d differs:\ninstrumented %.600s\noriginal     %.600s", i, inst[i], orig[i])
				}
			}
			t.Logf("%d results; first: %.200s", len(inst), inst[0])
		})
	}
}
