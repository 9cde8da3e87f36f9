package audit

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi/decision"
)

// BenchmarkRecord is the audit log's whole work for one line of a call
// through the quickstart chain (five decisions, no arguments or result):
// the caller's Record, and the writer's encoding and writing to a file,
// measured together by flushing at the end. The writer runs beside the
// loop, so ns/op is the slower of the two, per line: the writer's.
func BenchmarkRecord(b *testing.B) {
	l, err := New(Options{File: filepath.Join(b.TempDir(), "audit.jsonl"), Queue: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(context.Background())
	decisions := []decision.Decision{
		{Plugin: "no-delete", Hook: "tool_call", Action: decision.Allow},
		{Plugin: "redact", Hook: "tool_call", Action: decision.Allow},
		{Plugin: "redact", Hook: "tool_result", Action: decision.Unchanged},
		{Plugin: "truncate", Hook: "tool_result", Action: decision.Unchanged},
		{Plugin: "json-results", Hook: "tool_result", Action: decision.Unchanged},
	}
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		l.Record(&Entry{ID: NewID(now), Time: now.UTC(), Caller: Caller{Subject: "alice", Groups: []string{"eng"}, Method: "key", Session: "ESXUQHH2DAMPXFZOUJGAWKW47P", Client: "claude-code"},
			Name: "notes__read_note", Server: "notes", Tool: "read_note", Decisions: append([]decision.Decision(nil), decisions...), Outcome: "ok",
			DurationMs: 0.8, UpstreamMs: 0.5, PolicyMs: 0.04, RequestBytes: 17, ResponseBytes: 423})
		if len(l.in) > cap(l.in)/2 {
			// Keep the queue from overflowing: the cost measured is the
			// writing, not the dropping.
			_ = l.Flush(context.Background())
		}
	}
	if err := l.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	if st := l.Stats(); st.FileDropped > 0 {
		b.Fatalf("dropped %d", st.FileDropped)
	}
}
