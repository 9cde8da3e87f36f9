package gateway

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// BenchmarkToolCallProgress is a tool call over HTTP that asks for
// progress: the token mcphost makes, sends upstream and forgets per call
// is on its path.
func BenchmarkToolCallProgress(b *testing.B) {
	h, err := New(Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "hi"}}
	params.SetProgressToken("p")
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkProgressRoute is the router alone: a token made for a call,
// looked up once (a progress notification), and forgotten.
func BenchmarkProgressRoute(b *testing.B) {
	var r progressRouter
	r.init()
	u := &upstream.Server{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tok, done := r.register(ctx, u, nil, "p")
		if _, ok := r.lookup(u, tok); !ok {
			b.Fatal("lost")
		}
		done()
	}
}
