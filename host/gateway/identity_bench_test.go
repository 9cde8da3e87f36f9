package gateway

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
)

// BenchmarkToolCallHTTPAuth is BenchmarkToolCallHTTP per way of
// authenticating: none, an API key, an OAuth access token (RS256, the
// issuer's keys cached). One host per case, run side by side.
func BenchmarkToolCallHTTPAuth(b *testing.B) {
	as := authtest.New(b)
	const aud = "https://mcp.example.com/mcp"
	for _, tc := range []struct {
		name  string
		auth  *auth.Config
		token string
	}{
		{"none", nil, ""},
		{"key", testAuth, "alice-key-0123456789"},
		{"oauth", &auth.Config{OAuth: &auth.OAuth{Issuer: as.URL, Audience: aud}}, as.Token(b, "alice", aud, nil)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h, err := New(Config{Listen: listener.Config{Auth: tc.auth}, Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			if err := h.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(h.Handler())
			defer srv.Close()
			tr := &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}
			if tc.token != "" {
				tr.HTTPClient = authClient(tc.token)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
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
