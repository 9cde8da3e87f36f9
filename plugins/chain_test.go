package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

func newChain(t *testing.T, rt *Runtime, specs ...Spec) *Chain {
	t.Helper()
	c, err := rt.NewChain(context.Background(), specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func catalog() []abi.Tool {
	return []abi.Tool{
		{Name: "a__one", Server: "a", Tool: "one"},
		{Name: "a__two", Server: "a", Tool: "two"},
		{Name: "b__one", Server: "b", Tool: "one"},
		{Name: "b__two", Server: "b", Tool: "two"},
		{Name: "c__one", Server: "c", Tool: "one"},
	}
}

func names(tools []abi.Tool) string {
	s := make([]string, len(tools))
	for i, t := range tools {
		s[i] = t.Name
	}
	return strings.Join(s, ",")
}

func TestChainToolsList(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	tests := []struct {
		name  string
		specs []Spec
		want  string
	}{
		{"empty chain", nil, "a__one,a__two,b__one,b__two,c__one"},
		{"rename and filter compose", []Spec{
			policy(t, "p1", "drop", "two"),
			policy(t, "p2", "prefix", "x_"),
		}, "x_a__one,x_b__one,x_c__one"},
		{"scoped plugin sees and changes only its servers", []Spec{
			func() Spec {
				s := policy(t, "p", "prefix", "s_", "mode.tools_list", "reverse")
				s.Servers = []string{"b"}
				return s
			}(),
		}, "a__one,a__two,s_b__two,s_b__one,c__one"},
		{"scoped filter merges back in order", []Spec{
			func() Spec { s := policy(t, "p", "drop", "one"); s.Servers = []string{"a", "c"}; return s }(),
		}, "a__two,b__one,b__two"},
		{"hooks not described are not run", []Spec{
			policy(t, "p", "prefix", "x_", "hooks", "tool_call"),
		}, "a__one,a__two,b__one,b__two,c__one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newChain(t, rt, tt.specs...)
			got, err := c.ToolsList(context.Background(), &abi.ToolsListInput{Tools: catalog()})
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tt.want {
				t.Fatalf("got %s, want %s", names(got), tt.want)
			}
		})
	}
}

func TestChainToolsListInvalidOutput(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	tests := []struct {
		mode string
		msg  string
	}{
		{"clash", `duplicate name "same"`},
		{"invalid", `invalid name "bad name!"`},
		{"foreign", `server "nowhere" tool "smuggled" was not in the input`},
		{"badjson", "invalid character"},
		{"panic", "trapped"},
		{"error", "policy error from p"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			deny := newChain(t, rt, policy(t, "p", "mode.tools_list", tt.mode))
			_, err := deny.ToolsList(context.Background(), &abi.ToolsListInput{Tools: catalog()})
			if err == nil || !strings.Contains(err.Error(), `policy "p" failed in tools_list`) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("deny: %v", err)
			}
			skipSpec := policy(t, "p", "mode.tools_list", tt.mode)
			skipSpec.OnError = OnErrorSkip
			skip := newChain(t, rt, skipSpec, policy(t, "after", "prefix", "z"))
			got, err := skip.ToolsList(context.Background(), &abi.ToolsListInput{Tools: catalog()})
			if err != nil {
				t.Fatalf("skip: %v", err)
			}
			if names(got) != "za__one,za__two,zb__one,zb__two,zc__one" {
				t.Fatalf("skip: %s", names(got))
			}
		})
	}
	t.Run("scoped output clashing with an out-of-scope name", func(t *testing.T) {
		t.Parallel()
		s := policy(t, "p", "mode.tools_list", "clash")
		s.Servers = []string{"a"}
		in := append(catalog(), abi.Tool{Name: "same", Server: "c", Tool: "two"})
		_, err := newChain(t, rt, s).ToolsList(context.Background(), &abi.ToolsListInput{Tools: in})
		if !errors.Is(err, ErrInvalidOutput) {
			t.Fatalf("clash with out-of-scope name: %v", err)
		}
	})
}

func callChain(t *testing.T, c *Chain, server, args string) *abi.CallDecision {
	t.Helper()
	d, err := c.ToolCall(context.Background(), &abi.ToolCallInput{Name: server + "__t", Server: server, Tool: "t", Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestChainToolCall(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	t.Run("allow", func(t *testing.T) {
		t.Parallel()
		c := newChain(t, rt, policy(t, "p1"), policy(t, "p2"))
		if d := callChain(t, c, "a", `{}`); d.Action != abi.ActionAllow {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("first deny ends the chain", func(t *testing.T) {
		t.Parallel()
		c := newChain(t, rt, policy(t, "p1", "mode.tool_call", "deny", "reason", "no way"), policy(t, "p2", "mode.tool_call", "panic"))
		if d := callChain(t, c, "a", `{}`); d.Action != abi.ActionDeny || d.Reason != `policy "p1": no way` {
			t.Fatalf("%+v", d)
		}
		if st := c.Plugins()[1].Status(); st.Calls != 0 {
			t.Fatal("plugin after a deny was called")
		}
	})
	t.Run("rewrites compose", func(t *testing.T) {
		t.Parallel()
		c := newChain(t, rt, policy(t, "p1", "mode.tool_call", "rewrite"), policy(t, "p2", "mode.tool_call", "rewrite"))
		d := callChain(t, c, "a", `{"q":1}`)
		if d.Action != abi.ActionRewrite || string(d.Arguments) != `{"p1":"v1","p2":"v1","q":1}` {
			t.Fatalf("%+v %s", d, d.Arguments)
		}
	})
	t.Run("the next plugin sees rewritten arguments; respond short-circuits", func(t *testing.T) {
		t.Parallel()
		c := newChain(t, rt, policy(t, "p1", "mode.tool_call", "rewrite"), policy(t, "p2", "mode.tool_call", "respond"), policy(t, "p3", "mode.tool_call", "deny"))
		d := callChain(t, c, "a", `{"q":1}`)
		if d.Action != abi.ActionRespond || d.Result.Content[0].Text != `p2@v1:{"p1":"v1","q":1}` {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("scope", func(t *testing.T) {
		t.Parallel()
		s := policy(t, "p1", "mode.tool_call", "deny")
		s.Servers = []string{"b"}
		c := newChain(t, rt, s)
		if d := callChain(t, c, "a", `{}`); d.Action != abi.ActionAllow {
			t.Fatalf("out of scope: %+v", d)
		}
		if d := callChain(t, c, "b", `{}`); d.Action != abi.ActionDeny {
			t.Fatalf("in scope: %+v", d)
		}
	})
	for _, mode := range []string{"badaction", "rewrite-bad", "respond-null", "badjson", "panic", "error", "exit"} {
		t.Run("on_error deny: "+mode, func(t *testing.T) {
			t.Parallel()
			c := newChain(t, rt, policy(t, "strict", "mode.tool_call", mode))
			d := callChain(t, c, "a", `{}`)
			if d.Action != abi.ActionDeny || !strings.HasPrefix(d.Reason, `policy "strict" failed in tool_call: `) {
				t.Fatalf("%+v", d)
			}
			// One line with no engine internals; the full error is logged.
			if strings.ContainsAny(d.Reason, "\n\t") || strings.Contains(d.Reason, "wasm") || strings.Contains(d.Reason, "plugins:") {
				t.Fatalf("reason %q carries engine details", d.Reason)
			}
		})
		t.Run("on_error skip: "+mode, func(t *testing.T) {
			t.Parallel()
			s := policy(t, "lax", "mode.tool_call", mode)
			s.OnError = OnErrorSkip
			c := newChain(t, rt, s, policy(t, "next", "mode.tool_call", "rewrite"))
			d := callChain(t, c, "a", `{}`)
			if d.Action != abi.ActionRewrite || string(d.Arguments) != `{"next":"v1"}` {
				t.Fatalf("%+v", d)
			}
		})
	}
}

func TestChainToolResult(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	in := func() *abi.ToolResultInput {
		return &abi.ToolResultInput{Name: "a__t", Server: "a", Tool: "t", Arguments: json.RawMessage(`{}`),
			Result: &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: "upstream"}}}}
	}
	texts := func(r *abi.CallToolResult) string {
		var s []string
		for _, c := range r.Content {
			s = append(s, c.Text)
		}
		return strings.Join(s, ",")
	}
	c := newChain(t, rt, policy(t, "p1"), policy(t, "p2"))
	r, err := c.ToolResult(context.Background(), in())
	if err != nil || texts(r) != "upstream,p1@v1,p2@v1" {
		t.Fatalf("%v %+v", err, r)
	}
	for _, mode := range []string{"null", "badcontent", "badjson", "panic"} {
		deny := newChain(t, rt, policy(t, "p1"), policy(t, "strict", "mode.tool_result", mode))
		if _, err := deny.ToolResult(context.Background(), in()); err == nil || !strings.Contains(err.Error(), `policy "strict" failed in tool_result`) {
			t.Fatalf("deny %s: %v", mode, err)
		}
		s := policy(t, "lax", "mode.tool_result", mode)
		s.OnError = OnErrorSkip
		skip := newChain(t, rt, s, policy(t, "p2"))
		if r, err := skip.ToolResult(context.Background(), in()); err != nil || texts(r) != "upstream,p2@v1" {
			t.Fatalf("skip %s: %v %+v", mode, err, r)
		}
	}
}

func TestChainLoadFailureClosesTheRest(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	_, err := rt.NewChain(context.Background(), []Spec{policy(t, "good"), policy(t, "bad", "abi", "2.0")})
	var le *LoadError
	if !errors.As(err, &le) || le.Name != "bad" || !errors.Is(err, ErrABIVersion) {
		t.Fatalf("%v", err)
	}
	if _, err := rt.NewChain(context.Background(), []Spec{policy(t, "twin"), policy(t, "twin")}); !errors.Is(err, ErrSpec) {
		t.Fatalf("duplicate names: %v", err)
	}
	testproc.WaitFor(t, "the compiled modules to be released", 10*time.Second, func() bool { return rt.Modules() == 0 })
}

// TestChainToolsListExecution: a real guest sees each tool's execution,
// may change it, and cannot drop it: an entry without it (as from a guest
// built before the field) keeps the input's.
func TestChainToolsListExecution(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	in := catalog()
	for i := range in {
		in[i].Execution = json.RawMessage(`{"taskSupport":"optional"}`)
	}
	in[4].Execution = json.RawMessage(`{"taskSupport":"required","x":1}`)
	got, err := newChain(t, rt, policy(t, "p", "mode.tools_list", "execution")).ToolsList(context.Background(), &abi.ToolsListInput{Tools: in})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a__one": `{"taskSupport":"optional"}`, "a__two": `{"taskSupport":"forbidden"}`,
		"b__one": `{"taskSupport":"optional"}`, "b__two": `{"taskSupport":"forbidden"}`,
		"c__one": `{"taskSupport":"required","x":1}`,
	}
	for i, tool := range got {
		if string(tool.Execution) != want[tool.Name] {
			t.Errorf("%s: execution %s, want %s", tool.Name, tool.Execution, want[tool.Name])
		}
		if tool.Description != string(in[i].Execution) {
			t.Errorf("%s: the guest saw execution %q, want %s", tool.Name, tool.Description, in[i].Execution)
		}
	}
	if len(got) != len(in) {
		t.Fatalf("got %d tools, want %d", len(got), len(in))
	}
}
