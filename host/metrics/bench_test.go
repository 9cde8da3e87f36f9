package metrics

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// BenchmarkToolCallHTTP is a tools/call over streamable HTTP to a stdio
// upstream, with metrics off and on, side by side in one process.
func BenchmarkToolCallHTTP(b *testing.B) {
	bins, err := testproc.Build(b.TempDir(), map[string]string{"upstream": "../testdata/upstream"})
	if err != nil {
		b.Fatal(err)
	}
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			opts := &gateway.Options{}
			if on {
				m := New()
				opts.Observer, opts.Metrics = m, m.Handler()
			}
			h, err := gateway.New(gateway.Config{Servers: []upstream.ServerConfig{{Name: "a", Transport: upstream.TransportStdio, Command: bins["upstream"]}}}, opts)
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
			args := map[string]any{"text": "hi"}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__echo", Arguments: args})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
