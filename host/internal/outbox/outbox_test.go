package outbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// An outbox whose client has stopped reading (an unbuffered pipe nobody
// reads) never blocks push: progress for one token is coalesced, log
// messages beyond the queue are dropped and warned about once, and the
// session is closed once a write has been blocked for stuckAfter.
func TestOutboxSlowClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	id, _ := jsonrpc.MakeID(float64(1))
	if err := client.Write(ctx, &jsonrpc.Request{ID: id, Method: "initialize", Params: []byte(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized"}); err != nil {
		t.Fatal(err)
	}
	// From here on the client reads nothing.

	logs := &testproc.Buffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
	s := Sender{Session: ss, ID: "ds-test", StuckAfter: 2 * time.Second, Log: log}
	var o Queue
	start := time.Now()
	for i := range 3 * outboxSize {
		o.Push(s, Note{Kind: NoteProgress, Ctx: ctx, Progress: &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: float64(i)}})
	}
	for range 10 {
		o.Push(s, Note{Kind: NoteLog, Ctx: ctx, Log: &mcp.LoggingMessageParams{Level: "info", Data: "x"}})
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("pushing to a client that does not read took %v", d)
	}
	// The writer may take a few notes before the pipe stalls, and when it
	// does is up to the scheduler: a log message may take the room it made.
	o.mu.Lock()
	queued, droppedProgress, droppedLogs := len(o.q), o.dropped[NoteProgress], o.dropped[NoteLog]
	var last float64 = -1
	queuedLogs := 0
	for _, n := range o.q {
		if n.Kind == NoteProgress {
			last = n.Progress.Progress
		} else {
			queuedLogs++
		}
	}
	o.mu.Unlock()
	if queued != outboxSize || droppedProgress != 0 || droppedLogs == 0 || droppedLogs+uint64(queuedLogs) != 10 {
		t.Errorf("queued %d (%d logs), dropped %d progress and %d logs; want %d, 0 (coalesced), and the 10 logs dropped or queued, some dropped", queued, queuedLogs, droppedProgress, droppedLogs, outboxSize)
	}
	if last != float64(3*outboxSize-1) {
		t.Errorf("the queued progress is %v, want the latest, %d", last, 3*outboxSize-1)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	testproc.WaitFor(t, "the outbox to find the session stuck", 30*time.Second, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.stuck
	})
	// The go-sdk closes a session once its write in flight ends: over HTTP
	// the write deadline ends it; a pipe has none, so the client hangs up.
	client.Close()
	ended := make(chan struct{})
	go func() { ss.Wait(); close(ended) }()
	testproc.WaitFor(t, "the stuck session to be closed", 30*time.Second, func() bool {
		select {
		case <-ended:
			return true
		default:
			return false
		}
	})
	flushed := make(chan struct{})
	go func() { o.Flush(ctx); close(flushed) }()
	testproc.WaitFor(t, "flush to give up on a closed session", 10*time.Second, func() bool {
		select {
		case <-flushed:
			return true
		default:
			return false
		}
	})
	out := logs.String()
	if n := strings.Count(out, "not reading fast enough"); n != 1 {
		t.Errorf("the drop warning was logged %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "closing a downstream session that stopped reading") {
		t.Errorf("no warning about closing the session:\n%s", out)
	}
}
