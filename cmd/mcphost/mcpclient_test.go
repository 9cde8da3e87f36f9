package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectKey opens an MCP session (protocol 2025-11-25) to the mcphost
// serving /mcp at addr, presenting key as its bearer credential; opts may
// be nil. The session closes when the test ends.
func connectKey(t *testing.T, addr, key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{key, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: t.Name()}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls a tool and returns the text of its result and its
// isError; a JSON-RPC error fails the test (refusals must be results).
func callText(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatalf("%s: %v (a refusal must be a result, not a JSON-RPC error)", params.Name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}
