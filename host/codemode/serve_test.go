package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEngines: Serve decodes run_code's arguments, runs the script with
// the engine of the limits in force, builds another when they change
// (the old one closes once its runs end), and refuses after Close.
func TestEngines(t *testing.T) {
	var es Engines
	ctx := context.Background()
	a := Limits{Timeout: time.Minute, MaxCalls: 1}
	if err := es.Warm(a); err != nil {
		t.Fatal(err)
	}
	first := es.cur.engine
	var called []string
	res, err := es.Serve(ctx, a, json.RawMessage(`{"code":"tools.x({}); return tools.x({})"}`), []string{"x"}, echoCalls(&called))
	if err != nil || !res.IsError || !strings.Contains(text(res), "too many tool calls: a script may make 1") {
		t.Fatalf("under max_calls 1: %v %+v", err, res)
	}
	b := Limits{Timeout: time.Minute, MaxCalls: 2}
	res, err = es.Serve(ctx, b, json.RawMessage(`{"code":"tools.x({}); return tools.x({}).name"}`), []string{"x"}, echoCalls(&called))
	if err != nil || res.IsError || text(res) != `"x"` || es.cur.engine == first {
		t.Fatalf("under max_calls 2: %v %+v", err, res)
	}
	waitClosed(t, first)
	if _, err := es.Serve(ctx, b, json.RawMessage(`{"code":1}`), nil, nil); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("bad arguments: %v", err)
	}
	es.Close()
	if _, err := es.Serve(ctx, b, json.RawMessage(`{"code":"return 1"}`), nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// waitClosed waits for e to be closed by the goroutine that drains it.
func waitClosed(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !e.closed.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the old engine was not closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func text(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }
