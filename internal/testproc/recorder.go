package testproc

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Recorder is an MCP client's side of what a server sends besides results:
// it answers sampling ("sampled") and elicitation (decline), and records
// their params, and every log and progress notification, as JSON.
type Recorder struct {
	mu  sync.Mutex
	got []string
}

// Add records v as JSON.
func (r *Recorder) Add(v any) {
	b, _ := json.Marshal(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, string(b))
}

// All returns everything recorded, a line each.
func (r *Recorder) All() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.got, "\n")
}

// Options are client options whose handlers record into r.
func (r *Recorder) Options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			r.Add(req.Params)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			r.Add(req.Params)
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		LoggingMessageHandler:       func(_ context.Context, req *mcp.LoggingMessageRequest) { r.Add(req.Params) },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { r.Add(req.Params) },
	}
}
