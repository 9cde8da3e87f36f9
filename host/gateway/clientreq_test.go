package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// samplingClient answers sampling with "echo: PROMPT" and elicitation with
// a fixed username, recording what it was asked.
type samplingClient struct {
	mu      sync.Mutex
	prompts []string
	logs    []string
}

func (c *samplingClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := r.Params.Messages[0].Content.(*mcp.TextContent).Text
			c.mu.Lock()
			c.prompts = append(c.prompts, text)
			c.mu.Unlock()
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "echo: " + text}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.logs = append(c.logs, fmt.Sprint(r.Params.Data))
		},
	}
}

func (c *samplingClient) seen() ([]string, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.prompts...), append([]string(nil), c.logs...)
}

// Sampling and elicitation from an upstream reach the client whose call
// caused them, and the answers go back, through the go-sdk conformance server.
func TestSamplingAndElicitationRoundTrip(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{everythingServer("every")}}, nil)
	var c samplingClient
	cs := connectHTTP(t, h, c.options())
	got, isErr := callText(t, cs, "every__test_sampling", map[string]any{"prompt": "hello?"})
	if isErr || got != "LLM response: echo: hello?" {
		t.Fatalf("sampling = %q (isError %v)", got, isErr)
	}
	got, isErr = callText(t, cs, "every__test_elicitation", map[string]any{"message": "who?"})
	if isErr || !strings.Contains(got, "action=accept") || !strings.Contains(got, "ada") {
		t.Fatalf("elicitation = %q (isError %v)", got, isErr)
	}

	// SEP-1330 enum schemas reach the client untouched. (The go-sdk client
	// itself rejects some of them, so this client answers in a middleware.)
	var schema any
	c2 := mcp.NewClient(&mcp.Implementation{Name: "raw"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}})
	c2.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "elicitation/create" {
				schema = req.(*mcp.ElicitRequest).Params.RequestedSchema
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return next(ctx, method, req)
		}
	})
	cs2, err := c2.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: httptestServer(t, h) + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	if got, isErr = callText(t, cs2, "every__test_elicitation_sep1330_enums", nil); isErr {
		t.Fatalf("sep1330 elicitation = %q", got)
	}
	if b, _ := json.Marshal(schema); !strings.Contains(string(b), "titledMulti") {
		t.Errorf("the client got schema %s", b)
	}
}

// roots/list from an upstream is answered from the calling client's roots.
func TestRootsFromTheCaller(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := connectHTTPClient(t, h)
	c := mcp.NewClient(&mcp.Implementation{Name: "roots-client"}, nil)
	c.AddRoots(&mcp.Root{URI: "file:///work/one"}, &mcp.Root{URI: "file:///work/two"})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got, isErr := callText(t, cs, "a__ask_roots", nil); isErr || got != "file:///work/one,file:///work/two" {
		t.Fatalf("roots = %q (isError %v)", got, isErr)
	}
}

// On a shared session, a server-to-client request while two clients have
// calls in flight is refused with an error that says why and what to do.
func TestSharedSessionRefusesAmbiguousRequests(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	var c1, c2 samplingClient
	cs1 := connectHTTP(t, h, c1.options())
	cs2 := connectHTTP(t, h, c2.options())

	// Alone, the caller is unambiguous.
	if got, isErr := callText(t, cs1, "a__sample", map[string]any{"text": "one"}); isErr || got != "echo: one" {
		t.Fatalf("sample = %q (isError %v)", got, isErr)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		callText(t, cs2, "a__sleep", map[string]any{"millis": 1500})
	}()
	testproc.WaitFor(t, "the other call to be in flight", 5*time.Second, func() bool { return h.Statuses()[0].InFlight == 1 })
	got, isErr := callText(t, cs1, "a__sample", map[string]any{"text": "two"})
	if !isErr || !strings.Contains(got, "ambiguous") || !strings.Contains(got, `sessions = "per_client"`) {
		t.Fatalf("sample during another client's call = %q (isError %v), want an ambiguity error", got, isErr)
	}
	<-done
	if p1, _ := c1.seen(); len(p1) != 1 {
		t.Errorf("client 1 was asked %v", p1)
	}
	if p2, _ := c2.seen(); len(p2) != 0 {
		t.Errorf("client 2 was asked %v", p2)
	}
}

// connectHTTPClient serves h over loopback HTTP and returns its base URL.
func connectHTTPClient(t *testing.T, h *Host) string {
	t.Helper()
	srv := httptestServer(t, h)
	return srv
}
