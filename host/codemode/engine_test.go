package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// newEngine compiles the guest once per test under lim.
func newEngine(t testing.TB, lim Limits) *Engine {
	t.Helper()
	e, err := New(context.Background(), lim, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// echoCalls answers each call with its arguments as structured content,
// recording the names called.
func echoCalls(names *[]string) CallFunc {
	return func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		*names = append(*names, name)
		if name == "missing" {
			return nil, errors.New(`unknown tool "missing"`)
		}
		return json.Marshal(map[string]any{"content": []any{}, "structuredContent": map[string]any{"name": name, "args": args}})
	}
}

func TestRunReturnsValue(t *testing.T) {
	e := newEngine(t, Limits{Timeout: 20 * time.Second})
	var called []string
	out, err := e.Run(context.Background(), `
		const a = tools.add({x: 1});
		const b = await tools.add({x: a.args.x + 1});
		console.log("second", b.args);
		return {sum: a.args.x + b.args.x, names: [a.name, b.name]};`, []string{"add"}, echoCalls(&called))
	if err != nil {
		t.Fatal(err)
	}
	if out.Err != "" {
		t.Fatalf("script failed: %s", out.Err)
	}
	if got, want := string(out.Value), `{"sum":3,"names":["add","add"]}`; got != want {
		t.Errorf("value %s, want %s", got, want)
	}
	if len(out.Logs) != 1 || out.Logs[0] != `second {"x":2}` {
		t.Errorf("logs %q", out.Logs)
	}
	if out.Calls != 2 || len(called) != 2 {
		t.Errorf("calls %d (%v), want 2", out.Calls, called)
	}
}
