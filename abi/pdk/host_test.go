package pdk_test

// These tests build real plugins with the Go toolchain (GOOS=wasip1
// GOARCH=wasm, -buildmode=c-shared) and run them through the Extism host
// (github.com/extism/go-sdk with WASI enabled), to check what package pdk
// exports against what the ABI promises. They use Extism directly, not
// mcphost's plugins package, so they test the guest side alone.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/mcphost-project/mcphost/abi"
)

// buildPlugin builds the main package in dir as a WASI reactor and returns
// the path of the .wasm file. It skips the test if no go command is found.
func buildPlugin(t *testing.T, dir string) string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build plugins with: %v", err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(dir)+".wasm")
	cmd := exec.Command(gocmd, "build", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", dir, err, b)
	}
	return out
}

var compilationCache = sync.OnceValue(wazero.NewCompilationCache)

type logLine struct {
	level extism.LogLevel
	msg   string
}

// instance is one Extism plugin instance and the log lines it wrote.
type instance struct {
	t      *testing.T
	plugin *extism.Plugin
	mu     sync.Mutex
	logs   []logLine
}

// load instantiates wasmPath with config, the way mcphost does: WASI on,
// memory capped at 64 MiB, close on context done, a per-call timeout.
func load(t *testing.T, wasmPath string, config map[string]string) *instance {
	t.Helper()
	ctx := context.Background()
	manifest := extism.Manifest{
		Wasm:    []extism.Wasm{extism.WasmFile{Path: wasmPath}},
		Memory:  &extism.ManifestMemory{MaxPages: 64 << 20 / 65536},
		Config:  config,
		Timeout: 10_000, // generous: the race detector and a cold cache slow guests down
	}
	p, err := extism.NewPlugin(ctx, manifest, extism.PluginConfig{
		EnableWasi:    true,
		RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithCompilationCache(compilationCache()),
	}, nil)
	if err != nil {
		t.Fatalf("loading %s: %v", wasmPath, err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	in := &instance{t: t, plugin: p}
	p.SetLogger(func(level extism.LogLevel, msg string) {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.logs = append(in.logs, logLine{level, msg})
	})
	return in
}

// call runs export on input and returns its return code, output and error
// message; a host-side failure (trap, timeout) fails the test.
func (in *instance) call(export string, input any) (rc uint32, out []byte, errMsg string) {
	in.t.Helper()
	var data []byte
	switch v := input.(type) {
	case nil:
	case string:
		data = []byte(v)
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			in.t.Fatal(err)
		}
	}
	rc, out, err := in.plugin.CallWithContext(context.Background(), export, data)
	if err != nil {
		errMsg = err.Error()
		if rc == 0 {
			in.t.Fatalf("%s: error %q with return code 0", export, errMsg)
		}
	}
	return rc, out, errMsg
}

// ok runs export and decodes its output into v, failing on a plugin error.
func (in *instance) ok(export string, input any, v any) {
	in.t.Helper()
	rc, out, msg := in.call(export, input)
	if rc != 0 {
		in.t.Fatalf("%s: return code %d, error %q", export, rc, msg)
	}
	if len(out) > abi.MaxOutputSize {
		in.t.Fatalf("%s: output of %d bytes", export, len(out))
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		in.t.Fatalf("%s: decoding output %s: %v", export, out, err)
	}
}

// fails runs export and checks that it is a plugin error whose message
// contains want.
func (in *instance) fails(export string, input any, want string) {
	in.t.Helper()
	rc, out, msg := in.call(export, input)
	if rc == 0 {
		in.t.Fatalf("%s: succeeded with %s, want a plugin error", export, out)
	}
	if !strings.Contains(msg, want) {
		in.t.Fatalf("%s: error %q, want it to contain %q", export, msg, want)
	}
}

func boolp(b bool) *bool { return &b }

var caller = abi.Caller{SessionID: "s1", Transport: "stdio", ClientName: "test", Identity: "alice"}

func TestHostAllHooks(t *testing.T) {
	t.Parallel()
	wasm := buildPlugin(t, filepath.Join("testdata", "allhooks"))
	extism.SetLogLevel(extism.LogLevelInfo)

	t.Run("describe", func(t *testing.T) {
		t.Parallel()
		in := load(t, wasm, nil)
		var d abi.Describe
		in.ok(abi.ExportDescribe, nil, &d)
		want := abi.Describe{ABI: abi.Version, Name: "allhooks", Version: "0.1.0",
			Hooks: []string{abi.HookToolsList, abi.HookToolCall, abi.HookToolResult}}
		if !equalJSON(t, d, want) {
			t.Errorf("describe = %+v, want %+v", d, want)
		}
	})

	t.Run("tools_list", func(t *testing.T) {
		t.Parallel()
		in := load(t, wasm, map[string]string{"hide": `["fs__rm"]`, "suffix": "ok"})
		var out abi.ToolsListOutput
		in.ok(abi.ExportToolsList, abi.ToolsListInput{Caller: caller, Tools: []abi.Tool{
			{Name: "fs__read", Server: "fs", Tool: "read", Title: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "fs__rm", Server: "fs", Tool: "rm"},
			{Name: "fs__ls", Server: "fs", Tool: "ls", Annotations: &abi.Annotations{ReadOnlyHint: boolp(true)}},
		}}, &out)
		want := abi.ToolsListOutput{Tools: []abi.Tool{
			{Name: "fs__read", Server: "fs", Tool: "read", Title: "Read [ok]", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "fs__ls", Server: "fs", Tool: "ls", Title: "[ok]", Annotations: &abi.Annotations{ReadOnlyHint: boolp(true)}},
		}}
		if !equalJSON(t, out, want) {
			t.Errorf("tools_list = %s, want %s", mustJSON(t, out), mustJSON(t, want))
		}
	})

	t.Run("tool_call", func(t *testing.T) {
		t.Parallel()
		in := load(t, wasm, nil)
		call := func(tool, args string) abi.ToolCallInput {
			return abi.ToolCallInput{Caller: caller, Name: "srv__" + tool, Server: "srv", Tool: tool, Arguments: json.RawMessage(args)}
		}
		tests := []struct {
			tool, args string
			want       abi.CallDecision
		}{
			{"read", `{}`, abi.CallDecision{Action: abi.ActionAllow}},
			{"deny", `{}`, abi.CallDecision{Action: abi.ActionDeny, Reason: "srv__deny is denied for alice"}},
			{"rewrite", `{"path":"/tmp"}`, abi.CallDecision{Action: abi.ActionRewrite, Arguments: json.RawMessage(`{"path":"/tmp","rewritten":true}`)}},
			{"respond", `{}`, abi.CallDecision{Action: abi.ActionRespond, Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: "answered by allhooks"}}}}},
		}
		for _, tt := range tests {
			var d abi.CallDecision
			in.ok(abi.ExportToolCall, call(tt.tool, tt.args), &d)
			if !equalJSON(t, d, tt.want) {
				t.Errorf("tool_call %s = %s, want %s", tt.tool, mustJSON(t, d), mustJSON(t, tt.want))
			}
		}
	})

	t.Run("tool_result", func(t *testing.T) {
		t.Parallel()
		in := load(t, wasm, nil)
		var out abi.ToolResultOutput
		in.ok(abi.ExportToolResult, abi.ToolResultInput{Caller: caller, Name: "srv__read", Server: "srv", Tool: "read",
			Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: "hello"}}, StructuredContent: json.RawMessage(`{"n":1}`)},
		}, &out)
		want := abi.ToolResultOutput{Result: &abi.CallToolResult{
			Content:           []abi.Content{{Type: "text", Text: "hello"}, {Type: "text", Text: "checked by allhooks"}},
			StructuredContent: json.RawMessage(`{"n":1}`),
		}}
		if !equalJSON(t, out, want) {
			t.Errorf("tool_result = %s, want %s", mustJSON(t, out), mustJSON(t, want))
		}
	})

	t.Run("plugin errors keep the instance", func(t *testing.T) {
		t.Parallel()
		in := load(t, wasm, nil)
		// The handler's own error reaches the host as it is.
		in.fails(abi.ExportToolCall, abi.ToolCallInput{Name: "srv__fail", Server: "srv", Tool: "fail"}, "allhooks: refusing to judge srv__fail")
		// A panic is recovered and reported, not a trap.
		in.fails(abi.ExportToolCall, abi.ToolCallInput{Name: "srv__panic", Server: "srv", Tool: "panic"}, "pdk: panic in mcphost_tool_call: allhooks: boom")
		// Input that is not the hook's JSON.
		in.fails(abi.ExportToolCall, `{"name":`, "pdk: decoding tool_call input")
		in.fails(abi.ExportToolsList, `{"tools":{}}`, "pdk: decoding tools_list input")
		// The instance still works and kept its state: the handler has run three times.
		var d abi.CallDecision
		in.ok(abi.ExportToolCall, abi.ToolCallInput{Name: "srv__count", Server: "srv", Tool: "count"}, &d)
		if d.Action != abi.ActionDeny || d.Reason != "call 3" {
			t.Errorf("after errors: %+v, want deny with reason \"call 3\"", d)
		}
	})

	t.Run("bad config fails at describe", func(t *testing.T) {
		t.Parallel()
		in := load(t, wasm, map[string]string{"broken": "yes"})
		in.fails(abi.ExportDescribe, nil, "pdk: configuring allhooks: broken is set")
		in.fails(abi.ExportToolCall, abi.ToolCallInput{Tool: "read"}, "broken is set")
		in = load(t, wasm, map[string]string{"hide": `[1,2]`})
		in.fails(abi.ExportDescribe, nil, `config "hide": want a list of strings`)
	})

	t.Run("logging", func(t *testing.T) {
		t.Parallel()
		in := load(t, wasm, nil)
		var d abi.CallDecision
		in.ok(abi.ExportToolCall, abi.ToolCallInput{Name: "srv__log", Server: "srv", Tool: "log"}, &d)
		in.mu.Lock()
		defer in.mu.Unlock()
		found := false
		for _, l := range in.logs {
			if l.level == extism.LogLevelInfo && l.msg == "call 1 to srv__log" {
				found = true
			}
		}
		if !found {
			t.Errorf("logs = %+v, want an info line \"call 1 to srv__log\"", in.logs)
		}
	})
}

func TestHostExampleNoDestructive(t *testing.T) {
	t.Parallel()
	wasm := buildPlugin(t, filepath.Join("..", "..", "examples", "plugins", "go-no-destructive"))
	in := load(t, wasm, map[string]string{"deny": `["*__drop_*"]`})

	var d abi.Describe
	in.ok(abi.ExportDescribe, nil, &d)
	hints := &abi.Hints{ListPerTool: true, CallIgnoresArguments: true, IgnoresCaller: true}
	if !equalJSON(t, d, abi.Describe{ABI: abi.Version, Name: "no-destructive", Version: "1.0.0", Hooks: []string{abi.HookToolsList, abi.HookToolCall}, Hints: hints}) {
		t.Errorf("describe = %+v", d)
	}

	var list abi.ToolsListOutput
	in.ok(abi.ExportToolsList, abi.ToolsListInput{Caller: caller, Tools: []abi.Tool{
		{Name: "fs__read", Server: "fs", Tool: "read", Annotations: &abi.Annotations{ReadOnlyHint: boolp(true)}},
		{Name: "fs__rm", Server: "fs", Tool: "rm", Annotations: &abi.Annotations{DestructiveHint: boolp(true)}},
		{Name: "db__drop_table", Server: "db", Tool: "drop_table"},
		{Name: "db__query", Server: "db", Tool: "query"},
	}}, &list)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "fs__read,db__query" {
		t.Errorf("tools_list kept %s, want fs__read,db__query", got)
	}

	var dec abi.CallDecision
	in.ok(abi.ExportToolCall, abi.ToolCallInput{Caller: caller, Name: "fs__rm", Server: "fs", Tool: "rm",
		Arguments: json.RawMessage(`{"path":"/"}`), Annotations: &abi.Annotations{DestructiveHint: boolp(true)}}, &dec)
	if dec.Action != abi.ActionDeny || !strings.Contains(dec.Reason, "destructive") {
		t.Errorf("tool_call fs__rm = %+v, want a deny that says why", dec)
	}
	in.ok(abi.ExportToolCall, abi.ToolCallInput{Caller: caller, Name: "db__drop_table", Server: "db", Tool: "drop_table"}, &dec)
	if dec.Action != abi.ActionDeny || !strings.Contains(dec.Reason, `"*__drop_*"`) {
		t.Errorf("tool_call db__drop_table = %+v, want a deny naming the pattern", dec)
	}
	in.ok(abi.ExportToolCall, abi.ToolCallInput{Caller: caller, Name: "db__query", Server: "db", Tool: "query"}, &dec)
	if dec.Action != abi.ActionAllow {
		t.Errorf("tool_call db__query = %+v, want allow", dec)
	}

	// A plugin error: the example has no tool_result hook, and bad input.
	in.fails(abi.ExportToolResult, abi.ToolResultInput{}, "hook not implemented")
	in.fails(abi.ExportToolCall, `[]`, "pdk: decoding tool_call input")

	// A bad pattern is refused when the host loads the plugin.
	in = load(t, wasm, map[string]string{"deny": `["[a-"]`})
	in.fails(abi.ExportDescribe, nil, "syntax error in pattern")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(mustJSON(t, a)), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(mustJSON(t, b)), &y); err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, x) == mustJSON(t, y)
}
