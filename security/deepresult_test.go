package security

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPolicyDeepResult: a policy plugin that answers in a tool's place, or
// replaces its result, with structuredContent nested deeper than a tool
// plugin's result may be has failed: the caller gets a tool error that
// says why, never a message its client cannot read (999 levels passed the
// host's decoding, and the JSON-RPC message around them broke the
// go-sdk's), and the next call is served.
func TestPolicyDeepResult(t *testing.T) {
	for _, tc := range []struct{ hook, depth string }{
		{"tool_call", "999"}, {"tool_result", "999"}, {"tool_call", "5000"}, {"tool_result", "5000"},
	} {
		hook := tc.hook
		t.Run(hook+"/"+tc.depth, func(t *testing.T) {
			cfg := writeConfig(t, t.TempDir(), `
server "up" {
  command = "UPSTREAM"
}
plugin "deepresult" {
  source = "`+guest(t, "deepresult")+`"
  config = { hook = "`+hook+`", depth = "`+tc.depth+`" }
}
`)
			s := startServer(t, cfg)
			cs := connect(t, s.URL, nil)
			for range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "x"}})
				cancel()
				if err != nil {
					t.Fatalf("the call failed where a tool error was due: %v", err)
				}
				text := ""
				if len(res.Content) > 0 {
					if tc, ok := res.Content[0].(*mcp.TextContent); ok {
						text = tc.Text
					}
				}
				if !res.IsError || !strings.Contains(text, "nested deeper than 512") {
					t.Fatalf("got %q (isError %v), want a tool error saying the result is nested too deep", text, res.IsError)
				}
			}
		})
	}
}
