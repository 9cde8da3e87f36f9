package codemode

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkRun is one run_code of a script that makes three tool calls
// (answered in Go, no upstream): a fresh instance, QuickJS's start, the
// prelude, the script. docs/RATIONALE.md compares it with goja.
func BenchmarkRun(b *testing.B) {
	e := newEngine(b, Limits{Timeout: time.Minute})
	call := func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"x"}]}`), nil
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := e.Run(context.Background(), `let s = 0; for (let i = 0; i < 3; i++) s += tools.a({}).length; return {s}`, []string{"a"}, call)
		if err != nil || out.Err != "" {
			b.Fatal(err, out.Err)
		}
	}
}

// BenchmarkLoop is a script that only computes: a million additions.
func BenchmarkLoop(b *testing.B) {
	e := newEngine(b, Limits{Timeout: time.Minute})
	b.ReportAllocs()
	for b.Loop() {
		out, err := e.Run(context.Background(), `let s = 0; for (let i = 0; i < 1000000; i++) s += i; return s`, nil, nil)
		if err != nil || out.Err != "" {
			b.Fatal(err, out.Err)
		}
	}
}

// BenchmarkNew is compiling the guest (once per process and limits).
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		e, err := New(context.Background(), Limits{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		e.Close(context.Background())
	}
}
