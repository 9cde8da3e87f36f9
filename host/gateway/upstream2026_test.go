package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// TestUpstream2026InputRequestReachesTheCaller: a go-sdk server's tool
// written the 2026-07-28 way (an input_required result with an elicitation,
// then the retry with the answer) behind mcphost at protocol_version
// "2026-07-28". The go-sdk client runs the round trips itself, asking
// mcphost's elicitation handler, so a 2025-11-25 downstream client is asked
// on its call's stream and its answer reaches the upstream.
func TestUpstream2026InputRequestReachesTheCaller(t *testing.T) {
	var (
		mu       sync.Mutex
		answered []string
	)
	srv := mcp.NewServer(&mcp.Implementation{Name: "mrtr", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "who"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		resp, ok := req.Params.InputResponses["name"]
		if !ok {
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "who?", RequestedSchema: map[string]any{
					"type": "object", "properties": map[string]any{"username": map[string]any{"type": "string"}}}}},
				RequestState: "round-1",
			}, nil, nil
		}
		er, _ := resp.(*mcp.ElicitResult)
		if er == nil || req.Params.RequestState != "round-1" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad retry"}}}, nil, nil
		}
		name, _ := er.Content["username"].(string)
		mu.Lock()
		answered = append(answered, name)
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: er.Action + " " + name}}}, nil, nil
	})
	// The go-sdk's HTTP handler speaks 2026-07-28 only when stateless.
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)
	h := startHost(t, Config{Servers: []upstream.ServerConfig{{
		Name: "m", Transport: upstream.TransportStreamableHTTP, URL: up.URL, ProtocolVersion: "2026-07-28",
	}}}, nil)
	if v := h.Statuses()[0].ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("upstream session at %q, want 2026-07-28", v)
	}
	var c samplingClient
	cs := connectHTTP(t, h, c.options())
	got, isErr := callText(t, cs, "m__who", nil)
	if isErr || got != "accept ada" {
		t.Fatalf("who = %q (isError %v), want %q", got, isErr, "accept ada")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(answered) != 1 || answered[0] != "ada" {
		t.Fatalf("the upstream got answers %q", answered)
	}
}

// TestUpstream2026Everything: experiment.
func TestUpstream2026Everything(t *testing.T) {
	cfg := everythingServer("every")
	cfg.ProtocolVersion = "2026-07-28"
	h := startHost(t, Config{Servers: []upstream.ServerConfig{cfg}}, nil)
	t.Logf("status %+v", h.Statuses()[0])
	var c samplingClient
	cs := connectHTTP(t, h, c.options())
	for _, tc := range []struct{ name string; args map[string]any }{
		{"every__test_simple_text", nil},
		{"every__test_sampling", map[string]any{"prompt": "hello?"}},
		{"every__test_elicitation", map[string]any{"message": "who?"}},
		{"every__test_tool_with_logging", nil},
		{"every__test_tool_with_progress", nil},
	} {
		got, isErr := callText(t, cs, tc.name, tc.args)
		t.Logf("%s: %q isErr=%v", tc.name, got, isErr)
	}
	time.Sleep(200 * time.Millisecond)
	p, l := c.seen()
	t.Logf("prompts %q logs %q", p, l)
}

// TestUpstream2026FallsBack: a stdio server that knows no server/discover.
func TestUpstream2026FallsBack(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	h := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "ts", Transport: upstream.TransportStdio, Command: node, Args: []string{"testdata/taskserver.js"}, ProtocolVersion: "2026-07-28"}}}, nil)
	t.Logf("status %+v", h.Statuses()[0])
	cs := connectHTTP(t, h, nil)
	got, isErr := callText(t, cs, "ts__plain", nil)
	if isErr || !strings.Contains(got, "called plain") {
		t.Fatalf("plain = %q %v", got, isErr)
	}
}
