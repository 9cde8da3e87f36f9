package security

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect opens a go-sdk client session to an mcphost at base (/mcp),
// closed when the test ends.
func connect(t testing.TB, base string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "security-test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls a tool and returns its first text content and IsError.
func callText(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text, res.IsError
		}
	}
	return "", res.IsError
}

// TestHarness checks the suite's own plumbing: the built binary serves a
// real upstream's tool.
func TestHarness(t *testing.T) {
	cfg := writeConfig(t, "", `
server "up" {
  command = "UPSTREAM"
}
`)
	s := startServer(t, cfg)
	cs := connect(t, s.URL, nil)
	text, isErr := callText(t, cs, "up__echo", map[string]any{"text": "hello"})
	if isErr || text != "hello" {
		t.Fatalf("up__echo = %q (isError %v), want hello", text, isErr)
	}
}
