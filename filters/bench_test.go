package filters_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/plugins"
)

// benchTools is a catalog of n tools shaped like real ones: a description,
// a schema with three parameters, annotations on half of them.
func benchTools(n int) []abi.Tool {
	yes := true
	tools := make([]abi.Tool, n)
	for i := range tools {
		server := []string{"files", "clock", "notes", "github"}[i%4]
		tool := fmt.Sprintf("do_thing_%d", i)
		tools[i] = abi.Tool{
			Name: server + "__" + tool, Server: server, Tool: tool,
			Description: strings.Repeat("Does a useful thing with the input it is given. ", 4),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Where."},"offset":{"type":"integer","description":"From where."},"limit":{"type":"integer"}},"required":["path"]}`),
		}
		if i%2 == 0 {
			tools[i].Annotations = &abi.Annotations{ReadOnlyHint: &yes}
		}
	}
	return tools
}

type benchCase struct {
	policy string
	config map[string]string
	hook   string
	input  any
}

func benchCases() []benchCase {
	list := abi.ToolsListInput{Caller: abi.Caller{ClientName: "bench"}, Tools: benchTools(50)}
	call := abi.ToolCallInput{Name: "files__do_thing_0", Server: "files", Tool: "do_thing_0",
		Arguments: json.RawMessage(`{"path":"README.md","offset":0}`), Annotations: list.Tools[0].Annotations}
	result := func(text string) abi.ToolResultInput {
		return abi.ToolResultInput{Name: call.Name, Server: call.Server, Tool: call.Tool, Arguments: call.Arguments,
			Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: text}}}}
	}
	var items []abi.Item
	for _, t := range list.Tools {
		items = append(items, abi.Item{Server: t.Server, Name: t.Name, Item: json.RawMessage(`{"name":"` + t.Name + `","description":"` + t.Description + `"}`)})
	}
	prompts := abi.ListInput{Method: abi.MethodPromptsList, Items: items}
	read := func(text string) abi.MessageInput {
		return abi.MessageInput{Method: abi.MethodResourcesRead, Server: "notes", Name: "notes://1",
			Message: mustMarshal(map[string]any{"contents": []any{map[string]any{"uri": "notes://1", "mimeType": "text/plain", "text": text}}})}
	}
	var rows []string
	for i := 0; i < 40; i++ {
		rows = append(rows, fmt.Sprintf(`{"id":%d,"name":"row %d","tags":["a","b"]}`, i, i))
	}
	jsonText := "[" + strings.Join(rows, ",") + "]"
	const simpleText = "This is a simple text response for testing."
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 450) // ~20 KB
	return []benchCase{
		{"allow", map[string]string{"tools": `["files__*","clock__*"]`}, abi.HookToolsList, list},
		{"allow", map[string]string{"tools": `["files__*","clock__*"]`}, abi.HookToolCall, call},
		{"deny", map[string]string{"tools": `["*__do_thing_1*"]`}, abi.HookToolsList, list},
		{"mentions", map[string]string{"allowed_servers": `{"files":["*"],"clock":["*"]}`}, abi.HookToolsList,
			abi.ToolsListInput{Caller: abi.Caller{Meta: json.RawMessage(`{"mentions":["server:files","tool:notes__do_thing_2"]}`)}, Tools: list.Tools}},
		{"mentions", nil, abi.HookToolCall, call},
		{"titles", nil, abi.HookToolsList, list},
		{"describe", map[string]string{"prefix": "[{server}] "}, abi.HookToolsList, list},
		{"modes", map[string]string{"mode": "plan"}, abi.HookToolsList, list},
		{"modes", map[string]string{"mode": "plan"}, abi.HookToolCall, call},
		{"arguments", map[string]string{"fixed": `{"files__*":{"limit":10}}`}, abi.HookToolsList, list},
		{"arguments", map[string]string{"fixed": `{"files__*":{"limit":10}}`}, abi.HookToolCall, call},
		{"json_results", nil, abi.HookToolResult, result(jsonText)},
		// The result of the everything-server's test_simple_text, which the
		// gateway comparison calls.
		{"json_results", nil, abi.HookToolResult, result(simpleText)},
		{"redact", nil, abi.HookToolResult, result(simpleText)},
		{"truncate", nil, abi.HookToolResult, result(prose + prose)},
		{"truncate", nil, abi.HookToolResult, result("short")},
		{"redact", nil, abi.HookToolResult, result(prose + " ghp_" + strings.Repeat("a", 36) + " " + prose[:1000])},
		{"redact", map[string]string{"arguments": "true"}, abi.HookToolCall, call},
		// The hooks of ABI 1.2.
		{"allow", map[string]string{"prompts": `["files__*"]`}, abi.HookList, prompts},
		{"mentions", nil, abi.HookRequest, abi.RequestInput{Caller: abi.Caller{Meta: json.RawMessage(`{"mentions":["resource:notes://{id}"]}`)},
			Method: abi.MethodResourcesRead, Server: "notes", Name: "notes://1", Params: json.RawMessage(`{"uri":"notes://1"}`)}},
		{"redact", nil, abi.HookMessage, read(prose + " ghp_" + strings.Repeat("a", 36))},
		{"truncate", nil, abi.HookMessage, read(prose + prose)},
	}
}

// BenchmarkPolicies measures one hook call of each built-in through the
// real runtime: encoding on the host side is the caller's; this is the
// plugin call (Extism input, guest decode, policy, guest encode, output).
// Each runs under wazero's compiler (the host's) and its interpreter
// (plugins.RuntimeOptions.Interpreter), for docs/BENCHMARKS.md's
// "Interpreter or compiler for the built-ins".
func BenchmarkPolicies(b *testing.B) {
	ctx := context.Background()
	interp, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{Interpreter: true, CacheDir: b.TempDir(), Builtin: filters.Builtin})
	if err != nil {
		b.Fatal(err)
	}
	defer interp.Close(ctx)
	for _, e := range []struct {
		name string
		rt   *plugins.Runtime
	}{{"compiler", rt}, {"interpreter", interp}} {
		b.Run("engine="+e.name, func(b *testing.B) { benchPolicies(b, e.rt) })
	}
}

func benchPolicies(b *testing.B, rt *plugins.Runtime) {
	ctx := context.Background()
	for _, c := range benchCases() {
		input, err := json.Marshal(c.input)
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("%s/%s/%dB", c.policy, c.hook, len(input))
		b.Run(name, func(b *testing.B) {
			s := spec(c.policy, c.config)
			if c.policy == "pin" {
				s.AllowedPaths = map[string]string{b.TempDir(): "/pins"}
			}
			p, err := rt.Load(ctx, s)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
			b.SetBytes(int64(len(input)))
			for b.Loop() {
				if _, err := p.Call(ctx, c.hook, input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPin is builtin:pin's listing and call with its file granted:
// the steady state, every tool already pinned.
func BenchmarkPin(b *testing.B) {
	ctx := context.Background()
	s := spec("pin", nil)
	s.AllowedPaths = map[string]string{b.TempDir(): "/pins"}
	p, err := rt.Load(ctx, s)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	list, _ := json.Marshal(abi.ToolsListInput{Tools: benchTools(50)})
	call, _ := json.Marshal(abi.ToolCallInput{Name: "files__do_thing_0", Server: "files", Tool: "do_thing_0"})
	if _, err := p.Call(ctx, abi.HookToolsList, list); err != nil {
		b.Fatal(err)
	}
	b.Run(fmt.Sprintf("tools_list/%dB", len(list)), func(b *testing.B) {
		for b.Loop() {
			if _, err := p.Call(ctx, abi.HookToolsList, list); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("tool_call/%dB", len(call)), func(b *testing.B) {
		for b.Loop() {
			if _, err := p.Call(ctx, abi.HookToolCall, call); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReload is one hot swap of the quickstart chain: the titles
// plugin's config changes, so the Manager builds a generation with a new
// titles plugin (the other four carried over), swaps it in and retires
// the old one.
func BenchmarkReload(b *testing.B) {
	ctx := context.Background()
	m, err := plugins.NewManager(rt, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	specs := func(i int) []plugins.Spec {
		return []plugins.Spec{
			named("no-delete", spec("deny", map[string]string{"tools": `["notes__delete_note"]`})),
			named("titles", spec("titles", map[string]string{"overrides": fmt.Sprintf(`{"clock__current_time":"What time is it? %d"}`, i)})),
			named("redact", spec("redact", nil)),
			named("truncate", spec("truncate", map[string]string{"max_chars": "20000"})),
			named("json-results", spec("json_results", nil)),
		}
	}
	if err := m.Reload(ctx, specs(0)); err != nil {
		b.Fatal(err)
	}
	list := abi.ToolsListInput{Tools: benchTools(20)}
	i := 0
	for b.Loop() {
		i++
		if err := m.Reload(ctx, specs(i)); err != nil {
			b.Fatal(err)
		}
		// The first listing of the new generation, as the host prepares it.
		if _, err := m.ToolsList(ctx, &list); err != nil {
			b.Fatal(err)
		}
	}
}

func named(name string, s plugins.Spec) plugins.Spec {
	s.Name = name
	return s
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
