package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/filters"
)

// hintedSpecs is a chain of built-ins whose hints cover every kind of
// reuse: per-tool listings (deny, titles, describe, modes, arguments,
// mentions), reused call decisions with and without the caller (deny,
// modes, mentions, redact) and a result size threshold (truncate), plus
// json_results, which promises nothing.
func hintedSpecs() []Spec {
	return []Spec{
		{Name: "deny", Source: "builtin:deny", Config: map[string]string{"tools": `["*__drop_*"]`}},
		{Name: "mentions", Source: "builtin:mentions", Config: map[string]string{"allowed_servers": `{"a":["*"],"b":["*"],"c":["one","two","drop_3"]}`}},
		{Name: "titles", Source: "builtin:titles", Config: map[string]string{"overrides": `{"a__t1":"First"}`}},
		{Name: "describe", Source: "builtin:describe", Config: map[string]string{"prefix": "[{server}] "}},
		{Name: "modes", Source: "builtin:modes", Config: map[string]string{"meta_key": "mode"}},
		{Name: "arguments", Source: "builtin:arguments", Config: map[string]string{"fixed": `{"b__*":{"limit":10}}`}},
		{Name: "redact", Source: "builtin:redact"},
		{Name: "truncate", Source: "builtin:truncate", Config: map[string]string{"max_chars": "300"}},
		{Name: "json", Source: "builtin:json_results"},
	}
}

// randomCatalog makes n tools over three servers, some read-only, some
// matching the deny pattern, with descriptions that vary by version.
func randomCatalog(r *rand.Rand, n, version int) []abi.Tool {
	yes := true
	tools := make([]abi.Tool, 0, n)
	for i := range n {
		server := []string{"a", "b", "c"}[r.IntN(3)]
		name := fmt.Sprintf("t%d", i)
		if r.IntN(5) == 0 {
			name = fmt.Sprintf("drop_%d", i)
		}
		t := abi.Tool{Name: server + "__" + name, Server: server, Tool: name,
			Description: fmt.Sprintf("tool %d, version %d", i, version*r.IntN(2)),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer"}}}`)}
		if r.IntN(2) == 0 {
			t.Annotations = &abi.Annotations{ReadOnlyHint: &yes}
		}
		tools = append(tools, t)
	}
	return tools
}

// TestHintsDifferential runs the same listings, calls and results through
// a chain whose hints are used and one whose hints are ignored (every hook
// called every time, as by an ABI 1.0 host): the answers must be equal,
// while the first calls the guests far less.
func TestHintsDifferential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fast := newChain(t, newRuntime(t, RuntimeOptions{Builtin: filters.Builtin}), hintedSpecs()...)
	slow := newChain(t, newRuntime(t, RuntimeOptions{Builtin: filters.Builtin, IgnoreHints: true}), hintedSpecs()...)
	callers := []abi.Caller{
		{ClientName: "one"},
		{ClientName: "two", Meta: json.RawMessage(`{"mode":"plan"}`)},
		{ClientName: "three", Meta: json.RawMessage(`{"mentions":["server:a","tool:c__t2"]}`)},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for version := range 6 {
		tools := randomCatalog(r, 40, version)
		for _, caller := range callers {
			want, err := slow.ToolsList(ctx, &abi.ToolsListInput{Caller: caller, Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			got, err := fast.ToolsList(ctx, &abi.ToolsListInput{Caller: caller, Tools: tools})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("version %d caller %s: listing with hints\n%s\nwithout\n%s", version, caller.ClientName, mustMarshal(t, got), mustMarshal(t, want))
			}
			for i := range 10 {
				tool := tools[r.IntN(len(tools))]
				call := &abi.ToolCallInput{Caller: caller, Name: tool.Name, Server: tool.Server, Tool: tool.Tool,
					Arguments: json.RawMessage(fmt.Sprintf(`{"limit":%d}`, i)), Annotations: tool.Annotations}
				want, err := slow.ToolCall(ctx, call)
				if err != nil {
					t.Fatal(err)
				}
				got, err := fast.ToolCall(ctx, call)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("call %s as %s: decision with hints %+v, without %+v", tool.Name, caller.ClientName, got, want)
				}
				result := randomResult(r)
				res := func() *abi.ToolResultInput {
					var cp abi.CallToolResult
					if err := json.Unmarshal([]byte(mustMarshal(t, result)), &cp); err != nil {
						t.Fatal(err)
					}
					return &abi.ToolResultInput{Caller: caller, Name: tool.Name, Server: tool.Server, Tool: tool.Tool,
						Arguments: call.Arguments, Result: &cp}
				}
				wantRes, err := slow.ToolResult(ctx, res())
				if err != nil {
					t.Fatal(err)
				}
				gotRes, err := fast.ToolResult(ctx, res())
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(gotRes, wantRes) {
					t.Fatalf("result of %s %s: with hints %s, without %s", tool.Name, mustMarshal(t, result), mustMarshal(t, gotRes), mustMarshal(t, wantRes))
				}
			}
		}
	}
	fastCalls, slowCalls := guestCalls(fast), guestCalls(slow)
	t.Logf("guest calls with hints %d, without %d", fastCalls, slowCalls)
	if fastCalls >= slowCalls {
		t.Errorf("hints saved nothing: %d guest calls with them, %d without", fastCalls, slowCalls)
	}
}

// randomResult makes the results that exercise the result hints: plain
// text of any length, JSON text (with leading white space too), secrets
// in text, in a resource, in structuredContent or behind a JSON escape.
func randomResult(r *rand.Rand) *abi.CallToolResult {
	text := func(s string) []abi.Content { return []abi.Content{{Type: "text", Text: s}} }
	secret := "ghp_" + strings.Repeat("a", 36)
	switch r.IntN(9) {
	case 0:
		return &abi.CallToolResult{Content: text(`{"n":1}`)}
	case 1:
		return &abi.CallToolResult{Content: text(" \n\u00a0[1, 2]")}
	case 2:
		return &abi.CallToolResult{Content: text("your token is " + secret)}
	case 3:
		return &abi.CallToolResult{Content: []abi.Content{{Type: "resource",
			Resource: json.RawMessage(`{"uri":"file:///k","text":"AKIA` + strings.Repeat("B", 16) + `"}`)}}}
	case 4:
		return &abi.CallToolResult{Content: text("ok"), StructuredContent: json.RawMessage(`{"key":"sk-ant-` + strings.Repeat("c", 24) + `"}`)}
	case 5:
		// "ghp_" spelt with an escape: only a decoder sees the secret.
		return &abi.CallToolResult{Content: text("ok"), StructuredContent: json.RawMessage(`{"key":"\u0067hp_` + strings.Repeat("d", 36) + `"}`)}
	case 6:
		return &abi.CallToolResult{Content: append(text("a"), text("{\"two\":\"blocks\"}")...)}
	default:
		return &abi.CallToolResult{Content: text(strings.Repeat("x", r.IntN(400)))}
	}
}

func guestCalls(c *Chain) (n uint64) {
	for _, st := range c.Status() {
		n += st.Calls
	}
	return n
}

func callsOf(t *testing.T, c *Chain, name string) uint64 { return statusOf(t, c, name).Calls }

func statusOf(t *testing.T, c *Chain, name string) Status {
	t.Helper()
	for _, st := range c.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no plugin %q", name)
	return Status{}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHintsListOnlyNewTools checks what a per-tool plugin is asked after a
// change: only the tools it has not judged, for a caller it ignores.
func TestHintsListOnlyNewTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChain(t, newRuntime(t, RuntimeOptions{Builtin: filters.Builtin}),
		Spec{Name: "titles", Source: "builtin:titles"})
	tools := catalog()
	list := func(caller string, tools []abi.Tool) []abi.Tool {
		t.Helper()
		out, err := c.ToolsList(ctx, &abi.ToolsListInput{Caller: abi.Caller{SessionID: caller}, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := list("s1", tools)
	if n := callsOf(t, c, "titles"); n != 1 {
		t.Fatalf("first listing: %d guest calls, want 1", n)
	}
	// Another session, same tools: titles ignores the caller.
	if again := list("s2", tools); !reflect.DeepEqual(again, first) {
		t.Fatalf("second listing differs:\n%v\n%v", again, first)
	}
	if st := statusOf(t, c, "titles"); st.Calls != 1 || st.Reused != 1 {
		t.Fatalf("after an identical listing: %d guest calls and %d reused, want still 1 and 1", st.Calls, st.Reused)
	}
	// One tool changes and one is added: one more call, and the answer
	// is in the input's order.
	tools[2].Tool = "renamed_upstream"
	tools = append(tools, abi.Tool{Name: "d__new_tool", Server: "d", Tool: "new_tool"})
	out := list("s1", tools)
	if n := callsOf(t, c, "titles"); n != 2 {
		t.Fatalf("after a change: %d guest calls, want 2", n)
	}
	if got := names(out); got != "a__one,a__two,b__one,b__two,c__one,d__new_tool" {
		t.Fatalf("order after a change: %s", got)
	}
	if out[2].Title != "Renamed Upstream" || out[5].Title != "New Tool" || out[0].Title != "One" {
		t.Fatalf("titles after a change: %q %q %q", out[2].Title, out[5].Title, out[0].Title)
	}
}

// TestHintsCallDecisions checks that a reused deny is the guest's own and
// that the caller is part of the key unless the plugin ignores it.
func TestHintsCallDecisions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChain(t, newRuntime(t, RuntimeOptions{Builtin: filters.Builtin}),
		Spec{Name: "deny", Source: "builtin:deny", Config: map[string]string{"tools": `["a__*"]`}},
		Spec{Name: "mentions", Source: "builtin:mentions"})
	call := func(session, name string) *abi.CallDecision {
		t.Helper()
		server, tool, _ := strings.Cut(name, "__")
		d, err := c.ToolCall(ctx, &abi.ToolCallInput{Caller: abi.Caller{SessionID: session}, Name: name, Server: server, Tool: tool,
			Arguments: json.RawMessage(fmt.Sprintf(`{"session":%q}`, session))})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := call("s1", "a__x")
	if first.Action != abi.ActionDeny || !strings.Contains(first.Reason, "a__x") {
		t.Fatalf("first decision %+v", first)
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		if d := call(s, "a__x"); !reflect.DeepEqual(d, first) {
			t.Fatalf("reused decision for %s: %+v, want %+v", s, d, first)
		}
	}
	if st := statusOf(t, c, "deny"); st.Calls != 1 || st.Reused != 3 {
		t.Fatalf("deny was called %d times for one tool and reused %d, want 1 (it ignores the caller) and 3", st.Calls, st.Reused)
	}
	for _, s := range []string{"s1", "s2", "s1", "s2"} {
		if d := call(s, "b__y"); d.Action != abi.ActionAllow {
			t.Fatalf("b__y as %s: %+v", s, d)
		}
	}
	if n := callsOf(t, c, "mentions"); n != 2 {
		t.Fatalf("mentions was called %d times for two sessions, want 2 (it depends on the caller)", n)
	}
}

// TestHintsResultThreshold checks that truncate is skipped below its
// promise and still cuts above it.
func TestHintsResultThreshold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChain(t, newRuntime(t, RuntimeOptions{Builtin: filters.Builtin}),
		Spec{Name: "truncate", Source: "builtin:truncate", Config: map[string]string{"max_chars": "300"}})
	result := func(n int) *abi.CallToolResult {
		t.Helper()
		r, err := c.ToolResult(ctx, &abi.ToolResultInput{Name: "a__x", Server: "a", Tool: "x",
			Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: strings.Repeat("é", n)}}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := result(20); len(r.Content) != 1 || callsOf(t, c, "truncate") != 0 || statusOf(t, c, "truncate").Reused != 1 {
		t.Fatalf("a small result: %d blocks, %d guest calls; want 1 and 0", len(r.Content), callsOf(t, c, "truncate"))
	}
	// 200 two-byte characters are 400 bytes: the guest is asked, and keeps
	// them (200 characters are within 300).
	if r := result(200); len(r.Content) != 1 || callsOf(t, c, "truncate") != 1 {
		t.Fatalf("200 characters: %d blocks, %d guest calls; want 1 and 1", len(r.Content), callsOf(t, c, "truncate"))
	}
	if r := result(400); len(r.Content) != 2 || callsOf(t, c, "truncate") != 2 {
		t.Fatalf("400 characters: %d blocks, %d guest calls; want a cut (2) and 2", len(r.Content), callsOf(t, c, "truncate"))
	}
}

// TestUnchangedResult checks the ABI 1.1 "unchanged" answer end to end: a
// built-in that leaves a result alone answers it, and the chain passes on
// the very result it was given; one that changes it answers in full.
func TestUnchangedResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChain(t, newRuntime(t, RuntimeOptions{Builtin: filters.Builtin}), Spec{Name: "json", Source: "builtin:json_results"})
	in := &abi.ToolResultInput{Name: "a__x", Server: "a", Tool: "x",
		Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: "not JSON"}}}}
	r, err := c.ToolResult(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if r != in.Result {
		t.Fatalf("an unchanged result came back as a copy: %+v", r)
	}
	in.Result = &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: `{"a":1}`}}}
	if r, err = c.ToolResult(ctx, in); err != nil {
		t.Fatal(err)
	}
	if string(r.StructuredContent) != `{"a":1}` {
		t.Fatalf("a JSON text result: structuredContent %s", r.StructuredContent)
	}
}
