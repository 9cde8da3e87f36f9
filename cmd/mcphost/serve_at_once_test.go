package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestServeBeforeSlowUpstreams: an upstream that never answers initialize
// (connect_timeout 60 s) does not hold the gateway back: mcphost run serves
// the other server's tools about a second after it starts, says which
// server still connects, and the hanging one is never listed.
func TestServeBeforeSlowUpstreams(t *testing.T) {
	addr := testproc.FreeAddr(t)
	cfg := writeConfig(t, `
listen {
  http = "`+addr+`"
}
server "hang" {
  command         = "sleep"
  args            = ["600"]
  connect_timeout = "60s"
}
server "clock" {
  command = "CLOCK"
}
`)
	start := time.Now()
	m := startMcphost(t, "http://"+addr+"/healthz", 20*time.Second, "run", cfg, "--no-watch")
	served := time.Since(start)
	t.Logf("serving %v after the start, with one server that never answers", served.Round(time.Millisecond))
	if served > 10*time.Second {
		t.Errorf("mcphost served only %v after it started: the hanging server held it back", served)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: http.DefaultClient}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	joined := strings.Join(names, " ")
	if !strings.Contains(joined, "clock__") || strings.Contains(joined, "hang__") {
		t.Errorf("tools while hang connects: %s", joined)
	}
	if !strings.Contains(m.logs.String(), "serving while servers still connect") || !strings.Contains(m.logs.String(), "hang") {
		t.Errorf("the log does not say which server still connects:\n%s", m.logs)
	}
	if strings.Contains(m.logs.String(), "[ERROR]") {
		t.Errorf("a server still connecting is logged as an error:\n%s", m.logs)
	}
}
