package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fastTools is an InternalTools for tests: "echo" answers its arguments
// after a progress and a log message; "block" waits to be cancelled.
type fastTools struct{ cancelled atomic.Int32 }

func (f *fastTools) CallToolRaw(ctx context.Context, c *InternalCall) (json.RawMessage, error) {
	switch c.Name {
	case "echo":
		if tok, ok := c.Meta["progressToken"]; ok {
			if err := c.Progress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2}); err != nil {
				return nil, err
			}
		}
		if _, err := c.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "hello"}); err != nil {
			return nil, err
		}
		text, _ := json.Marshal(string(c.Arguments))
		return json.RawMessage(`{"content":[{"type":"text","text":` + string(text) + `}]}`), nil
	case "block":
		<-ctx.Done()
		f.cancelled.Add(1)
		return nil, ctx.Err()
	}
	return json.RawMessage(`{"content":[],"isError":true}`), nil
}

// TestMemPipeFastPath: a go-sdk client on a memPipe with a fast path gets
// tools/call answered by it, with its progress and (once the client set a
// level) log messages first, and its cancellation reaching the call;
// everything else goes to the in-process server.
func TestMemPipeFastPath(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "listed by the server"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	fast := &fastTools{}
	ct, st := memPipe(fast)
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	var notes atomic.Value
	notes.Store("")
	add := func(s string) { notes.Store(notes.Load().(string) + s + ";") }
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { add("progress") },
		LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { add("log") },
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "slow" {
		t.Fatalf("listing through the server: %v %v", tools, err)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"a": 1}}
	p.SetProgressToken("t1")
	res, err := cs.CallTool(ctx, p)
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `{"a":1}`) {
		t.Fatalf("echo: %v %+v", err, res)
	}
	deadline := time.Now().Add(5 * time.Second)
	for notes.Load().(string) != "progress;log;" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := notes.Load().(string); got != "progress;log;" {
		t.Errorf("notifications: %q", got)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "block"}); err == nil {
		t.Fatal("a cancelled call answered")
	}
	for fast.cancelled.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if fast.cancelled.Load() != 1 {
		t.Error("the client's cancellation did not reach the call")
	}
}
