package host

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An outbox carries the notifications an upstream sends toward one
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
type outbox struct {
	mu      sync.Mutex
	q       []note
	running bool   // a writer goroutine is draining q
	queued  uint64 // notes accepted so far
	sent    uint64 // notes the writer has finished with (sent or failed)
	waiters []outboxWaiter
	dropped [noteKinds]uint64
	stuck   bool // the session was closed for not reading

	keepOpen atomic.Bool // never close the session for not reading (stdio: the only client)

	pending atomic.Int64 // len(q) plus a note being written: a lock-free "nothing to flush"
	sending atomic.Int64 // unix nanos when the current write started, 0 when none
	timer   *time.Timer  // fires when a write stays blocked for stuckAfter
}

type noteKind uint8

const (
	noteLog noteKind = iota
	noteProgress
	noteResourceUpdated
	noteElicitationComplete
	noteKinds
)

func (k noteKind) String() string {
	switch k {
	case noteLog:
		return "log messages"
	case noteProgress:
		return "progress notifications"
	case noteResourceUpdated:
		return "resource updates"
	}
	return "elicitation completions"
}

// note is one queued notification, with the context of the downstream call
// it belongs to (so it goes on that call's stream), or Background.
type note struct {
	kind     noteKind
	ctx      context.Context
	server   string // the upstream it came from, for policies; "" if unknown
	log      *mcp.LoggingMessageParams
	progress *mcp.ProgressNotificationParams
	updated  *mcp.ResourceUpdatedNotificationParams
	// send writes the other kinds (their go-sdk calls differ: a resource
	// update is written by the sending middleware's next handler), with
	// the note as governed (its updated params possibly replaced).
	send func(context.Context, note) error
}

type outboxWaiter struct {
	upTo uint64
	ch   chan struct{}
}

// Bounds of an outbox. outboxSize notes of at most the upstream's message
// size each; a client that reads keeps its queue near empty.
const (
	outboxSize        = 256
	defaultStuckAfter = 30 * time.Second
)

// outboxSender is what an outbox needs from the host: how to send, how long
// a write may block, and where to say what it dropped.
type outboxSender struct {
	ss         *mcp.ServerSession
	id         string
	stuckAfter time.Duration
	log        hclog.Logger
	// govern runs the policy's message hook over a note on the writer
	// goroutine, off the upstream's read loop; false drops the note.
	govern func(note) (note, bool)
}

// push queues n, or drops or coalesces it when the queue is full. It never
// blocks on the client.
func (o *outbox) push(s outboxSender, n note) {
	o.mu.Lock()
	if o.stuck {
		o.mu.Unlock()
		return
	}
	if len(o.q) >= outboxSize {
		if n.kind == noteProgress && o.coalesceLocked(n) {
			o.mu.Unlock()
			return
		}
		o.dropped[n.kind]++
		first := o.dropped[n.kind] == 1
		o.mu.Unlock()
		if first {
			s.log.Warn("a downstream client is not reading fast enough: dropping its "+n.kind.String()+" (counted; the total is logged when the session ends)",
				"session", s.id, "queued", outboxSize)
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
func (o *outbox) coalesceLocked(n note) bool {
	for i := len(o.q) - 1; i >= 0; i-- {
		q := o.q[i]
		if q.kind == noteProgress && q.ctx == n.ctx && sameToken(q.progress.ProgressToken, n.progress.ProgressToken) {
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
func (o *outbox) drain(s outboxSender) {
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
		o.q[0] = note{}
		o.q = o.q[1:]
		if o.timer == nil {
			o.timer = time.AfterFunc(s.stuckAfter, func() { o.checkStuck(s) })
		} else {
			o.timer.Reset(s.stuckAfter)
		}
		o.mu.Unlock()

		start := time.Now()
		o.sending.Store(start.UnixNano())
		err := o.send(s, n)
		o.sending.Store(0)
		if err != nil && time.Since(start) >= s.stuckAfter/2 {
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

func (o *outbox) send(s outboxSender, n note) error {
	// The context names the call's stream; its deadline is the upstream
	// call's, which may have passed while the note waited, and the call's
	// response waits for it (flush), so the stream is still open.
	ctx := context.WithoutCancel(n.ctx)
	if s.govern != nil {
		var ok bool
		if n, ok = s.govern(n); !ok {
			return nil
		}
	}
	var err error
	switch n.kind {
	case noteLog:
		err = s.ss.Log(ctx, n.log)
	case noteProgress:
		err = s.ss.NotifyProgress(ctx, n.progress)
	default:
		err = n.send(ctx, n)
	}
	if err != nil {
		s.log.Debug("forwarding a notification failed", "session", s.id, "kind", n.kind.String(), "error", err)
	}
	return err
}

// checkStuck closes the session when a write has been blocked for
// stuckAfter: the client stopped reading.
func (o *outbox) checkStuck(s outboxSender) {
	since := o.sending.Load()
	if since == 0 || time.Since(time.Unix(0, since)) < s.stuckAfter {
		return
	}
	o.closeStuck(s)
}

// closeStuck closes the session of a client that stopped reading, once.
func (o *outbox) closeStuck(s outboxSender) {
	if o.keepOpen.Load() {
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
	s.log.Warn("closing a downstream session that stopped reading", "session", s.id, "write_timeout", s.stuckAfter)
	_ = s.ss.Close()
}

// flush waits until the notes queued before it was called have been
// written, so that a call's notifications reach the client ahead of its
// response. It gives up when ctx ends or the session is found stuck.
func (o *outbox) flush(ctx context.Context) {
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

func (o *outbox) wakeLocked() {
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

func (o *outbox) wakeAllLocked() {
	for _, w := range o.waiters {
		close(w.ch)
	}
	o.waiters = nil
}

// closed stops the outbox when its session ended and reports what it
// dropped.
func (o *outbox) closed(s outboxSender) {
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
		s.log.Warn("a downstream session ended with notifications dropped because it read too slowly",
			"session", s.id, "log_messages", dropped[noteLog], "progress", dropped[noteProgress],
			"resource_updates", dropped[noteResourceUpdated], "elicitation_completions", dropped[noteElicitationComplete])
	}
}
