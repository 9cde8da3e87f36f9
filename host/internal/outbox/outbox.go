// Package outbox queues the notifications an upstream sends toward one
// downstream session, so that a client that stops reading slows no one
// else (Queue says how).
package outbox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Queue carries the notifications an upstream sends toward one
// downstream session: its log messages, the progress of its calls, updates
// of the resources it subscribed to and completions of its elicitations.
//
// Why: they were written downstream from the upstream connection's read
// loop, so a client that stopped reading blocked the write, the read loop,
// and with it every other client's calls to that server. Now the read loop
// only queues; a goroutine per session (started when there is something to
// send, gone when the queue is empty, so an idle session costs none)
// writes. A session that falls behind loses notifications, never
// responses: when its queue is full, a progress notification replaces the
// queued one for the same token, and anything else is dropped, counted,
// and warned about once per session. A write that stays blocked past
// stuckAfter (listen.write_timeout), or fails after blocking half of it
// (it met the HTTP write deadline, limits.go), closes the session; a
// call's response waits for the notes queued before it (flush), so their
// order on the call's stream is kept.
type Queue struct {
	mu      sync.Mutex
	q       []Note
	running bool   // a writer goroutine is draining q
	queued  uint64 // notes accepted so far
	sent    uint64 // notes the writer has finished with (sent or failed)
	waiters []outboxWaiter
	dropped [noteKinds]uint64
	stuck   bool // the session was closed for not reading

	KeepOpen atomic.Bool // never close the session for not reading (stdio: the only client)

	pending atomic.Int64 // len(q) plus a note being written: a lock-free "nothing to flush"
	sending atomic.Int64 // unix nanos when the current write started, 0 when none
	timer   *time.Timer  // fires when a write stays blocked for stuckAfter
}

type noteKind uint8

const (
	NoteLog noteKind = iota
	NoteProgress
	NoteResourceUpdated
	NoteElicitationComplete
	NoteToolsChanged // notifications/tools/list_changed for this session alone
	noteKinds
)

func (k noteKind) String() string {
	switch k {
	case NoteLog:
		return "log messages"
	case NoteProgress:
		return "progress notifications"
	case NoteResourceUpdated:
		return "resource updates"
	case NoteToolsChanged:
		return "tool list changes"
	}
	return "elicitation completions"
}

// Note is one queued notification, with the context of the downstream call
// it belongs to (so it goes on that call's stream), or Background.
type Note struct {
	Kind     noteKind
	Ctx      context.Context
	Server   string // the upstream it came from, for policies; "" if unknown
	Log      *mcp.LoggingMessageParams
	Progress *mcp.ProgressNotificationParams
	Updated  *mcp.ResourceUpdatedNotificationParams
	// Send writes the other kinds (their go-sdk calls differ: a resource
	// update is written by the sending middleware's next handler), with
	// the note as governed (its updated params possibly replaced).
	Send func(context.Context, Note) error
}

type outboxWaiter struct {
	upTo uint64
	ch   chan struct{}
}

// Bounds of an outbox. outboxSize notes of at most the upstream's message
// size each; a client that reads keeps its queue near empty.
const (
	outboxSize        = 256
	DefaultStuckAfter = 30 * time.Second
)

// Sender is what a Queue needs from the host: how to send, how long
// a write may block, and where to say what it dropped.
type Sender struct {
	Session    *mcp.ServerSession
	ID         string
	StuckAfter time.Duration
	Log        hclog.Logger
	// Govern runs the policy's message hook over a note on the writer
	// goroutine, off the upstream's read loop; false drops the note.
	Govern func(Note) (Note, bool)
}

// Push queues n, or drops or coalesces it when the queue is full. It never
// blocks on the client.
func (o *Queue) Push(s Sender, n Note) {
	o.mu.Lock()
	if o.stuck {
		o.mu.Unlock()
		return
	}
	if len(o.q) >= outboxSize {
		if n.Kind == NoteProgress && o.coalesceLocked(n) {
			o.mu.Unlock()
			return
		}
		o.dropped[n.Kind]++
		first := o.dropped[n.Kind] == 1
		o.mu.Unlock()
		if first {
			s.Log.Warn("a downstream client is not reading fast enough: dropping its "+n.Kind.String()+" (counted; the total is logged when the session ends)",
				"session", s.ID, "queued", outboxSize)
		}
		return
	}
	o.q = append(o.q, n)
	o.queued++
	o.pending.Add(1)
	start := !o.running
	o.running = true
	o.mu.Unlock()
	if start {
		go o.drain(s)
	}
}

// coalesceLocked replaces a queued progress notification for the same
// token with n (the latest progress is what matters).
func (o *Queue) coalesceLocked(n Note) bool {
	for i := len(o.q) - 1; i >= 0; i-- {
		q := o.q[i]
		if q.Kind == NoteProgress && q.Ctx == n.Ctx && sameToken(q.Progress.ProgressToken, n.Progress.ProgressToken) {
			o.q[i] = n
			return true
		}
	}
	return false
}

// sameToken compares progress tokens, which are strings or numbers; any
// other value (a client may send anything) is never equal.
func sameToken(a, b any) bool {
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && a == b
	case float64:
		b, ok := b.(float64)
		return ok && a == b
	case int64:
		b, ok := b.(int64)
		return ok && a == b
	case int:
		b, ok := b.(int)
		return ok && a == b
	}
	return false
}

// drain writes queued notes until the queue is empty.
func (o *Queue) drain(s Sender) {
	for {
		o.mu.Lock()
		if len(o.q) == 0 || o.stuck {
			o.running = false
			o.pending.Add(-int64(len(o.q)))
			o.sent += uint64(len(o.q))
			o.q = nil
			o.wakeLocked()
			o.mu.Unlock()
			return
		}
		n := o.q[0]
		o.q[0] = Note{}
		o.q = o.q[1:]
		if o.timer == nil {
			o.timer = time.AfterFunc(s.StuckAfter, func() { o.checkStuck(s) })
		} else {
			o.timer.Reset(s.StuckAfter)
		}
		o.mu.Unlock()

		start := time.Now()
		o.sending.Store(start.UnixNano())
		err := o.send(s, n)
		o.sending.Store(0)
		if err != nil && time.Since(start) >= s.StuckAfter/2 {
			// A write that fails after blocking this long met the HTTP
			// write deadline (serve.go): the client stopped reading.
			o.closeStuck(s)
		}

		o.mu.Lock()
		o.timer.Stop()
		o.sent++
		o.pending.Add(-1)
		o.wakeLocked()
		o.mu.Unlock()
	}
}

func (o *Queue) send(s Sender, n Note) error {
	// The context names the call's stream; its deadline is the upstream
	// call's, which may have passed while the note waited, and the call's
	// response waits for it (flush), so the stream is still open.
	ctx := context.WithoutCancel(n.Ctx)
	if s.Govern != nil {
		var ok bool
		if n, ok = s.Govern(n); !ok {
			return nil
		}
	}
	var err error
	switch n.Kind {
	case NoteLog:
		err = s.Session.Log(ctx, n.Log)
	case NoteProgress:
		err = s.Session.NotifyProgress(ctx, n.Progress)
	default:
		err = n.Send(ctx, n)
	}
	if err != nil {
		s.Log.Debug("forwarding a notification failed", "session", s.ID, "kind", n.Kind.String(), "error", err)
	}
	return err
}

// checkStuck closes the session when a write has been blocked for
// stuckAfter: the client stopped reading.
func (o *Queue) checkStuck(s Sender) {
	since := o.sending.Load()
	if since == 0 || time.Since(time.Unix(0, since)) < s.StuckAfter {
		return
	}
	o.closeStuck(s)
}

// closeStuck closes the session of a client that stopped reading, once.
func (o *Queue) closeStuck(s Sender) {
	if o.KeepOpen.Load() {
		return
	}
	o.mu.Lock()
	already := o.stuck
	o.stuck = true
	o.wakeAllLocked()
	o.mu.Unlock()
	if already {
		return
	}
	s.Log.Warn("closing a downstream session that stopped reading", "session", s.ID, "write_timeout", s.StuckAfter)
	_ = s.Session.Close()
}

// Flush waits until the notes queued before it was called have been
// written, so that a call's notifications reach the client ahead of its
// response. It gives up when ctx ends or the session is found stuck.
func (o *Queue) Flush(ctx context.Context) {
	if o.pending.Load() == 0 {
		return
	}
	o.mu.Lock()
	if o.sent >= o.queued || o.stuck {
		o.mu.Unlock()
		return
	}
	w := outboxWaiter{upTo: o.queued, ch: make(chan struct{})}
	o.waiters = append(o.waiters, w)
	o.mu.Unlock()
	select {
	case <-w.ch:
	case <-ctx.Done():
	}
}

func (o *Queue) wakeLocked() {
	kept := o.waiters[:0]
	for _, w := range o.waiters {
		if o.sent >= w.upTo {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	o.waiters = kept
}

func (o *Queue) wakeAllLocked() {
	for _, w := range o.waiters {
		close(w.ch)
	}
	o.waiters = nil
}

// Closed stops the outbox when its session ended and reports what it
// dropped.
func (o *Queue) Closed(s Sender) {
	o.mu.Lock()
	o.stuck = true
	dropped := o.dropped
	o.wakeAllLocked()
	if o.timer != nil {
		o.timer.Stop()
	}
	o.mu.Unlock()
	var total uint64
	for _, n := range dropped {
		total += n
	}
	if total > 0 {
		s.Log.Warn("a downstream session ended with notifications dropped because it read too slowly",
			"session", s.ID, "log_messages", dropped[NoteLog], "progress", dropped[NoteProgress],
			"resource_updates", dropped[NoteResourceUpdated], "elicitation_completions", dropped[NoteElicitationComplete], "tool_list_changes", dropped[NoteToolsChanged])
	}
}
