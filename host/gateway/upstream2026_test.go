package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// mrtrServer is a go-sdk server whose tool "who" asks its client the
// 2026-07-28 way (an input_required result with an elicitation, then the
// retry with the answer), recording the answers it gets. The go-sdk server
// asks a client of 2025-11-25 or earlier with elicitation/create itself.
func mrtrServer(answered *[]string, mu *sync.Mutex) *mcp.Server {
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
		*answered = append(*answered, name)
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: er.Action + " " + name}}}, nil, nil
	})
	return srv
}

// TestUpstream2026InputRequestReachesTheCaller: mrtrServer behind mcphost
// at protocol_version "2026-07-28" (the go-sdk's HTTP handler speaks it
// only when stateless). The go-sdk client runs the rounds itself, asking
// mcphost's elicitation handler, so a 2025-11-25 client is asked on its
// call's stream, and a 2026-07-28 client in rounds of its own; each
// answer reaches the upstream.
func TestUpstream2026InputRequestReachesTheCaller(t *testing.T) {
	var (
		mu       sync.Mutex
		answered []string
	)
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mrtrServer(&answered, &mu) },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)
	h := startHost(t, Config{Servers: []upstream.ServerConfig{{
		Name: "m", Transport: upstream.TransportStreamableHTTP, URL: up.URL, ProtocolVersion: "2026-07-28",
	}}}, nil)
	if v := h.Statuses()[0].ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("upstream session at %q, want 2026-07-28", v)
	}
	var c samplingClient
	old := connectHTTP(t, h, c.options())
	if got, isErr := callText(t, old, "m__who", nil); isErr || got != "accept ada" {
		t.Fatalf("2025-11-25 client: who = %q (isError %v), want %q", got, isErr, "accept ada")
	}
	var c2 samplingClient
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "new"}, c2.options()).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: httptestServer(t, h) + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got, isErr := callText(t, cs, "m__who", nil); isErr || got != "accept ada" {
		t.Fatalf("2026-07-28 client: who = %q (isError %v), want %q", got, isErr, "accept ada")
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(answered) != "[ada ada]" {
		t.Fatalf("the upstream got answers %q, want two", answered)
	}
}

// TestUpstream2026Everything: the go-sdk conformance server at
// protocol_version "2026-07-28". Tools, progress, prompts, resources and
// logs pass (the level goes in each request's _meta: the server no longer
// keeps what logging/setLevel set); its sampling and elicitation tools
// fail, as the server asks mid-call, which 2026-07-28 forbids (the reason
// the default stays 2025-11-25).
func TestUpstream2026Everything(t *testing.T) {
	cfg := everythingServer("every")
	cfg.ProtocolVersion = "2026-07-28"
	h := startHost(t, Config{Servers: []upstream.ServerConfig{cfg}}, nil)
	if v := h.Statuses()[0].ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("upstream session at %q, want 2026-07-28", v)
	}
	var (
		mu       sync.Mutex
		logs     []string
		progress int
	)
	cs := connectHTTP(t, h, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, fmt.Sprint(r.Params.Level, " ", r.Params.Data))
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress++
		},
	})
	ctx := context.Background()
	if got := okText(t, cs, "every__test_simple_text", nil); !strings.Contains(got, "simple text") {
		t.Errorf("simple text = %q", got)
	}
	p := &mcp.CallToolParams{Name: "every__test_tool_with_progress"}
	p.SetProgressToken("tok")
	if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
		t.Fatalf("progress tool: %v %+v", err, res)
	}
	if pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "every__test_simple_prompt"}); err != nil || len(pr.Messages) == 0 {
		t.Errorf("prompt: %v %+v", err, pr)
	}
	if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil || len(rr.Contents) == 0 {
		t.Errorf("resource: %v %+v", err, rr)
	}

	// The level set at "info", the server's three messages (info and up) come.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	okText(t, cs, "every__test_tool_with_logging", nil)
	testproc.WaitFor(t, "three log messages", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(logs) == 3
	})
	mu.Lock()
	if progress == 0 {
		t.Error("no progress reached the client")
	}
	mu.Unlock()

	// The server's own sampling and elicitation tools ask mid-call.
	var c samplingClient
	cs2 := connectHTTP(t, h, c.options())
	if got, isErr := callText(t, cs2, "every__test_elicitation", map[string]any{"message": "who?"}); !isErr || !strings.Contains(got, "cannot be sent while serving a request") {
		t.Errorf("elicitation at 2026-07-28 = %q (isError %v), want the server's refusal", got, isErr)
	}
}

// TestUpstream2026FallsBack: protocol_version "2026-07-28" on servers that
// do not speak it. Each session falls back to 2025-11-25 on its own: a
// Node stdio server that answers server/discover with -32601 and the
// go-sdk's stateful HTTP handler that refuses 2026-07-28; calls go on,
// and mrtrServer's question (asked by the go-sdk server itself at
// 2025-11-25) still reaches the client.
func TestUpstream2026FallsBack(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: one server of this test is a Node script")
	}
	var (
		mu       sync.Mutex
		answered []string
	)
	srv := mrtrServer(&answered, &mu)
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(up.Close)
	h := startHost(t, Config{Servers: []upstream.ServerConfig{
		{Name: "ts", Transport: upstream.TransportStdio, Command: node, Args: []string{"testdata/taskserver.js"}, ProtocolVersion: "2026-07-28"},
		{Name: "m", Transport: upstream.TransportStreamableHTTP, URL: up.URL, ProtocolVersion: "2026-07-28"},
	}}, nil)
	for _, st := range h.Statuses() {
		if st.ProtocolVersion != "2025-11-25" {
			t.Errorf("%s: session at %q, want the fallback 2025-11-25", st.Name, st.ProtocolVersion)
		}
	}
	var c samplingClient
	cs := connectHTTP(t, h, c.options())
	if got, isErr := callText(t, cs, "ts__plain", nil); isErr || !strings.Contains(got, "called plain") {
		t.Errorf("ts__plain = %q (isError %v)", got, isErr)
	}
	if got, isErr := callText(t, cs, "m__who", nil); isErr || got != "accept ada" {
		t.Errorf("m__who = %q (isError %v)", got, isErr)
	}
}

// TestUpstream2026LogLevelPerClient: on per-client sessions each client's
// level goes in its own session's requests: a client at "info" gets the
// conformance server's three messages, one at "error" none of them.
func TestUpstream2026LogLevelPerClient(t *testing.T) {
	cfg := everythingServer("every")
	cfg.ProtocolVersion = "2026-07-28"
	cfg.Sessions = upstream.SessionsPerClient
	h := startHost(t, Config{Servers: []upstream.ServerConfig{cfg}}, nil)
	var (
		mu   sync.Mutex
		logs = map[string][]string{}
	)
	client := func(name string, level mcp.LoggingLevel) *mcp.ClientSession {
		cs := connectHTTP(t, h, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs[name] = append(logs[name], fmt.Sprint(r.Params.Level))
		}})
		if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	quiet, loud := client("quiet", "error"), client("loud", "info")
	okText(t, quiet, "every__test_tool_with_logging", nil)
	okText(t, loud, "every__test_tool_with_logging", nil)
	testproc.WaitFor(t, "three log messages", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(logs["loud"]) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	if len(logs["quiet"]) != 0 {
		t.Errorf("the client at error got %v", logs["quiet"])
	}
	if st := h.Statuses()[0]; st.ClientSessions != 2 {
		t.Errorf("%d client sessions, want 2", st.ClientSessions)
	}
}
