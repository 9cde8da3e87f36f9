package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

func TestInspect(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	path := guest(t, "policy")
	info, err := Inspect(context.Background(), rt, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	wasm, _ := os.ReadFile(path)
	if info.Size != len(wasm) || len(info.SHA256) != 64 || info.ABI != abi.Version || info.Name != "policy" ||
		info.Version != "v1" || len(info.Hooks) != 3 || info.CompileTime <= 0 || info.InstantiateTime <= 0 {
		t.Fatalf("%+v", info)
	}
	for _, e := range []string{abi.ExportDescribe, abi.ExportToolsList, abi.ExportToolCall, abi.ExportToolResult, "_initialize"} {
		if !strings.Contains(strings.Join(info.Exports, " "), e) {
			t.Fatalf("exports %v lack %s", info.Exports, e)
		}
	}
	// A module that fails the load check is still described as far as it goes.
	info, err = Inspect(context.Background(), rt, guest(t, "describeonly"), nil)
	if !errors.Is(err, ErrMissingExport) || info.Name != "describeonly" || len(info.Exports) == 0 {
		t.Fatalf("%+v, %v", info, err)
	}
	empty := filepath.Join(t.TempDir(), "empty.wasm")
	os.WriteFile(empty, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	if info, err = Inspect(context.Background(), rt, empty, nil); !errors.Is(err, ErrMissingExport) || info.Size != 8 || info.InstantiateTime <= 0 {
		t.Fatalf("%+v, %v", info, err)
	}
	// A file that is no module stops before anything is described.
	text := filepath.Join(t.TempDir(), "text.wasm")
	os.WriteFile(text, []byte("garbage\n"), 0o644)
	if info, err = Inspect(context.Background(), rt, text, nil); !errors.Is(err, ErrCompile) || info.SHA256 != "" {
		t.Fatalf("%+v, %v", info, err)
	}
}

// Inspect reads "builtin:NAME" as a plugin spec does, and describes the
// module with the builtin's configuration.
func TestInspectBuiltin(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{Builtin: filters.Builtin, BuiltinNames: filters.Names()})
	info, err := Inspect(context.Background(), rt, "builtin:titles", nil)
	if err != nil || info.Name != "titles" || len(info.SHA256) != 64 || info.Size == 0 {
		t.Fatalf("%+v, %v", info, err)
	}
	if _, err := Inspect(context.Background(), rt, "builtin:nope", nil); !errors.Is(err, ErrSource) || !strings.Contains(err.Error(), "titles") {
		t.Fatalf("unknown builtin: %v", err)
	}
}

func TestRunHook(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	ctx := context.Background()
	in, _ := json.Marshal(abi.ToolsListInput{Tools: catalog()})
	out, err := RunHook(ctx, rt, policy(t, "p", "drop", "one"), abi.HookToolsList, in)
	if err != nil {
		t.Fatal(err)
	}
	var got abi.ToolsListOutput
	if err := json.Unmarshal(out, &got); err != nil || names(got.Tools) != "a__two,b__two" {
		t.Fatalf("%s %v", out, err)
	}
	out, err = RunHook(ctx, rt, policy(t, "p", "mode.tools_list", "clash"), abi.HookToolsList, in)
	if !errors.Is(err, ErrInvalidOutput) || len(out) == 0 {
		t.Fatalf("invalid output: %s, %v", out, err)
	}
	if _, err := RunHook(ctx, rt, policy(t, "p", "mode.tool_call", "panic"), abi.HookToolCall, callInput(t, `{}`)); !errors.Is(err, ErrTrap) {
		t.Fatalf("trap: %v", err)
	}
	if _, err := RunHook(ctx, rt, policy(t, "p"), "nope", nil); !errors.Is(err, ErrNoHook) {
		t.Fatalf("unknown hook: %v", err)
	}
	testproc.WaitFor(t, "the compiled modules to be released", 10*time.Second, func() bool { return rt.Modules() == 0 })
}

func ExampleErrTimeout() {
	// Callers branch on the kind of failure with errors.Is and errors.As.
	err := fmt.Errorf("checking call: %w", &TrapError{Plugin: "p", Hook: abi.HookToolCall, ExitCode: 2, Memory: true})
	var te *TrapError
	fmt.Println(errors.Is(err, ErrTrap), errors.Is(err, ErrMemoryLimit), errors.Is(err, ErrTimeout), errors.As(err, &te) && te.ExitCode == 2)
	// Output: true true false true
}

// TestCommandModuleHint: a Go plugin built without -buildmode=c-shared (a
// WASI command: _start, no _initialize) traps in describe; the error says
// how to build it.
func TestCommandModuleHint(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	out := filepath.Join(t.TempDir(), "command.wasm")
	cmd := exec.Command(gobin, "build", "-o", out, "./testdata/guests/describeonly")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the guest as a command: %v\n%s", err, b)
	}
	rt := newRuntime(t, RuntimeOptions{})
	_, err = Inspect(context.Background(), rt, out, nil)
	if !errors.Is(err, ErrTrap) || !strings.Contains(err.Error(), "-buildmode=c-shared") {
		t.Errorf("a command module: %v, want a trap that says to build with -buildmode=c-shared", err)
	}
}
