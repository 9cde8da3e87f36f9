package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
)

// decisionsText renders ds as "plugin/hook/action[paths](reason)!".
func decisionsText(ds []decision.Decision) string {
	var out []string
	for _, s := range ds {
		t := s.Plugin + "/" + s.Hook + "/" + s.Action
		if len(s.Paths) > 0 {
			t += fmt.Sprint(s.Paths)
		}
		if s.Reason != "" {
			t += "(" + s.Reason + ")"
		}
		if s.Error != "" {
			t += "!"
		}
		out = append(out, t)
	}
	return strings.Join(out, " ")
}

// recording returns a context whose recorder appends to *ds.
func recording(ds *[]decision.Decision) context.Context {
	return decision.WithRecorder(context.Background(), func(d decision.Decision) { *ds = append(*ds, d) })
}

func TestToolCallDecisions(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	skip := policy(t, "flaky", "mode.tool_call", "error")
	skip.OnError = OnErrorSkip
	closed := policy(t, "broken", "mode.tool_call", "error")
	for _, c := range []struct {
		name  string
		specs []Spec
		want  string
	}{
		{"every plugin in order, a rewrite's paths, a failure skipped", []Spec{
			policy(t, "rw", "mode.tool_call", "rewrite"), skip, policy(t, "ok"),
		}, "rw/tool_call/rewrite[/rw] flaky/tool_call/skipped! ok/tool_call/allow"},
		{"a deny ends the chain, with the plugin's own reason", []Spec{
			policy(t, "first"), policy(t, "no", "mode.tool_call", "deny", "reason", "not today"), policy(t, "never"),
		}, "first/tool_call/allow no/tool_call/deny(not today)"},
		{"failing closed is a deny with the failure", []Spec{closed, policy(t, "never")},
			`broken/tool_call/deny(policy "broken" failed in tool_call: returned an error: policy error from broken)!`},
		{"respond", []Spec{policy(t, "r", "mode.tool_call", "respond"), policy(t, "never")}, "r/tool_call/respond"},
		{"plugins out of scope have no decision", []Spec{func() Spec { s := policy(t, "elsewhere"); s.Servers = []string{"b"}; return s }()}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ch := newChain(t, rt, c.specs...)
			var ds []decision.Decision
			d, err := ch.ToolCall(recording(&ds), &abi.ToolCallInput{Name: "a__one", Server: "a", Tool: "one",
				Arguments: json.RawMessage(`{"keep":1}`)})
			if err != nil {
				t.Fatal(err)
			}
			if got := decisionsText(ds); got != c.want {
				t.Fatalf("decisions %s\nwant      %s", got, c.want)
			}
			// The chain's answer is the same, recorded or not.
			plain, err := ch.ToolCall(context.Background(), &abi.ToolCallInput{Name: "a__one", Server: "a", Tool: "one", Arguments: json.RawMessage(`{"keep":1}`)})
			if err != nil || plain.Action != d.Action || plain.Reason != d.Reason || string(plain.Arguments) != string(d.Arguments) {
				t.Fatalf("recorded %+v, not %+v (%v)", d, plain, err)
			}
		})
	}
}

func TestToolResultDecisions(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	skip := policy(t, "flaky", "mode.tool_result", "error")
	skip.OnError = OnErrorSkip
	ch := newChain(t, rt,
		policy(t, "adds", "hooks", "tool_result"),                                    // appends a text block
		policy(t, "same", "hooks", "tool_result", "mode.tool_result", "passthrough"), // returns it as it came
		skip,
	)
	var ds []decision.Decision
	in := &abi.ToolResultInput{Name: "a__one", Server: "a", Tool: "one",
		Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: "hi"}}}}
	out, err := ch.ToolResult(recording(&ds), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Content) != 2 {
		t.Fatalf("result %+v", out)
	}
	want := "adds/tool_result/changed[/content/1] same/tool_result/unchanged flaky/tool_result/skipped!"
	if got := decisionsText(ds); got != want {
		t.Fatalf("decisions %s\nwant      %s", got, want)
	}

	closed := newChain(t, rt, policy(t, "broken", "hooks", "tool_result", "mode.tool_result", "error"))
	ds = nil
	if _, err := closed.ToolResult(recording(&ds), in); err == nil {
		t.Fatal("a plugin failing closed let the result through")
	}
	if len(ds) != 1 || ds[0].Action != decision.Deny || ds[0].Error == "" {
		t.Fatalf("decisions %+v", ds)
	}
}

func TestToolsListDecisions(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	ch := newChain(t, rt, policy(t, "drop-two", "drop", "two"), policy(t, "renames", "prefix", "x_"), policy(t, "drop-b", "drop", "b__"))
	var ds []decision.Decision
	got, err := ch.ToolsList(recording(&ds), &abi.ToolsListInput{Tools: catalog()})
	if err != nil {
		t.Fatal(err)
	}
	// Only plugins that hid tools have a decision, with the names they saw.
	if len(ds) != 1 || ds[0].Plugin != "drop-two" || ds[0].Action != decision.Deny ||
		!slices.Equal(ds[0].Tools, []string{"a__two", "b__two"}) {
		t.Fatalf("decisions %+v (listing %s)", ds, names(got))
	}
}

// The manager records through its current generation, as the chain does;
// each call's decisions reach its own recorder only.
func TestManagerRecordsDecisions(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	m, err := NewManager(rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if err := m.Reload(context.Background(), []Spec{policy(t, "rw", "mode.tool_call", "rewrite"), policy(t, "adds", "hooks", "tool_result")}); err != nil {
		t.Fatal(err)
	}
	var calls, results []decision.Decision
	if _, err := m.ToolCall(recording(&calls), &abi.ToolCallInput{Name: "a__one", Server: "a", Tool: "one", Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	in := &abi.ToolResultInput{Name: "a__one", Server: "a", Tool: "one", Result: &abi.CallToolResult{Content: []abi.Content{}}}
	if _, err := m.ToolResult(recording(&results), in); err != nil {
		t.Fatal(err)
	}
	if got := decisionsText(calls) + " | " + decisionsText(results); got != "rw/tool_call/rewrite[/rw] | rw/tool_result/changed[/content/0] adds/tool_result/changed[/content/1]" {
		t.Fatalf("decisions %s", got)
	}
}

func TestResultParts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		before, after string
		want          []string
	}{
		{`{"content":[{"type":"text","text":"a"}]}`, `{"content":[{"type":"text","text":"b"},{"type":"text","text":"n"}]}`, []string{"/content/0", "/content/1"}},
		{`{"content":[],"structuredContent":{"rows":[{"n":"a"}]}}`, `{"content":[],"structuredContent":{"rows":[{"n":"b"}]}}`, []string{"/structuredContent/rows/0/n"}},
		{`{"content":[]}`, `{"content":[],"isError":true,"_meta":{"a":1,"b":2}}`, []string{"/_meta", "/isError"}},
	} {
		var a, b abi.CallToolResult
		if err := errors.Join(json.Unmarshal([]byte(c.before), &a), json.Unmarshal([]byte(c.after), &b)); err != nil {
			t.Fatal(err)
		}
		got, err := resultParts(&a, &b)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s -> %s: %q, %v; want %q", c.before, c.after, got, err, c.want)
		}
	}
}

func TestMessageBy(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	m, err := NewManager(rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	ctx := context.Background()
	in := &abi.MessageInput{Method: abi.MethodLoggingMessage, Message: json.RawMessage(`{"data":"a secret"}`)}
	if _, err := m.MessageBy(ctx, "masker", in); !errors.Is(err, ErrNoPlugin) {
		t.Fatalf("before any generation: %v", err)
	}
	// Scoped to another server and to other callers: MessageBy runs it anyway.
	masker := policy(t, "masker", "hooks", "message")
	masker.Servers, masker.Callers = []string{"elsewhere"}, []string{"nobody"}
	broken := policy(t, "broken", "hooks", "message", "mode.message", "error")
	broken.OnError = OnErrorSkip
	if err := m.Reload(ctx, []Spec{masker, policy(t, "listonly", "hooks", "tools_list"), broken}); err != nil {
		t.Fatal(err)
	}
	out, err := m.MessageBy(ctx, "masker", in)
	if err != nil || string(out) != `{"data":"a masker@`+buildVersionOf(t)+`"}` {
		t.Fatalf("MessageBy = %s, %v", out, err)
	}
	if _, err := m.MessageBy(ctx, "listonly", in); !errors.Is(err, ErrNoHook) {
		t.Errorf("a plugin without the hook: %v", err)
	}
	if _, err := m.MessageBy(ctx, "nobody", in); !errors.Is(err, ErrNoPlugin) {
		t.Errorf("no such plugin: %v", err)
	}
	// on_error = "skip" means nothing here: the failure is the caller's.
	var pe *PolicyError
	if _, err := m.MessageBy(ctx, "broken", in); !errors.As(err, &pe) || pe.Plugin != "broken" {
		t.Errorf("a failing plugin: %v", err)
	}
}

// buildVersionOf is the version the policy guest reports by default.
func buildVersionOf(t *testing.T) string {
	t.Helper()
	rt := newRuntime(t, RuntimeOptions{})
	p := load(t, rt, policy(t, "v"))
	return p.Describe().Version
}
