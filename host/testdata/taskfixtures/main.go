// Command taskfixtures is a plain MCP server (stdio, no tasks of its own)
// with the tools the conformance suite's task scenarios (the
// io.modelcontextprotocol/tasks extension, SEP-2663) call by name. It is the
// upstream of .ci/conformance-tasks.sh: mcphost runs its slow calls as tasks
// (the tasks block's after), as it does for any server without tasks.
//
//   - greet: answers "Hello, NAME!" at once.
//   - slow_compute: sleeps seconds, then answers "computed LABEL"; a
//     cancelled call ends at once with the context's error.
//   - failing_job: after a second, a tool error (isError).
//   - protocol_error_job: after a second, a JSON-RPC error.
//   - confirm_delete: asks the client to confirm (elicitation), then answers.
//   - multi_input: asks the client two questions at once, then answers.
//   - test_tool_with_task: asks the client for user_name, then, a second
//     later, answers with it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type greetIn struct {
	Name string `json:"name"`
}

type computeIn struct {
	Seconds float64 `json:"seconds"`
	Label   string  `json:"label,omitempty"`
}

type deleteIn struct {
	Filename string `json:"filename"`
}

type empty struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// sleep waits d or until ctx ends, and says which.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ask elicits one string property from the client and returns it; a
// declined or cancelled request is an error.
func ask(ctx context.Context, ss *mcp.ServerSession, message, property string) (string, error) {
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Message: message,
		RequestedSchema: &jsonSchema{Type: "object", Required: []string{property},
			Properties: map[string]*jsonSchema{property: {Type: "string"}}},
	})
	if err != nil {
		return "", fmt.Errorf("taskfixtures: elicitation: %w", err)
	}
	if res.Action != "accept" {
		return "", fmt.Errorf("taskfixtures: the client answered %q", res.Action)
	}
	v, _ := res.Content[property].(string)
	return v, nil
}

// jsonSchema is the little of JSON Schema an elicitation's requestedSchema
// needs here.
type jsonSchema struct {
	Type       string                 `json:"type"`
	Required   []string               `json:"required,omitempty"`
	Properties map[string]*jsonSchema `json:"properties,omitempty"`
}

func main() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "taskfixtures", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greets name at once."},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return text("Hello, " + in.Name + "!"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow_compute", Description: "Sleeps seconds, then answers with label."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in computeIn) (*mcp.CallToolResult, any, error) {
			if err := sleep(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
				return nil, nil, err
			}
			return text("computed " + in.Label), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "failing_job", Description: "Fails as a tool (isError) after a second."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			if err := sleep(ctx, time.Second); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the job failed"}}}, nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "protocol_error_job", Description: "Fails with a JSON-RPC error after a second.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			return nil, errors.New("taskfixtures: protocol_error_job always fails")
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "confirm_delete", Description: "Asks the client to confirm deleting filename."},
		func(ctx context.Context, req *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
			if _, err := ask(ctx, req.Session, "Delete "+in.Filename+"?", "confirm"); err != nil {
				return nil, nil, err
			}
			return text("deleted " + in.Filename), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "multi_input", Description: "Asks the client two questions at once."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			var answers [2]string
			var errs [2]error
			var wg sync.WaitGroup
			for i, q := range []string{"first", "second"} {
				wg.Go(func() { answers[i], errs[i] = ask(ctx, req.Session, q+"?", q) })
			}
			wg.Wait()
			if err := errors.Join(errs[:]...); err != nil {
				return nil, nil, err
			}
			first, second := answers[0], answers[1]
			return text("got " + first + " and " + second), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "test_tool_with_task", Description: "Asks for user_name, then answers with it a second later."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			name, err := ask(ctx, req.Session, "Your name?", "user_name")
			if err != nil {
				return nil, nil, err
			}
			if err := sleep(ctx, time.Second); err != nil {
				return nil, nil, err
			}
			return text("Hello, " + name + "!"), nil, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
