package gateway

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/internal/outbox"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/listener"
)

// sessionTable tracks the downstream sessions the host has seen, with what
// they set that outlives a request (log level, shared subscriptions), and
// cleans up after each when it ends. The go-sdk has no session-closed
// callback: a goroutine waits on ServerSession.Wait, which returns when the
// client closes, the transport fails or the HTTP session times out.
type sessionTable struct {
	mu   sync.Mutex
	m    map[*mcp.ServerSession]*downstream
	next uint64
	// uncounted is how many of m are legacy SSE sessions (limits.go
	// counts those by their streams) or sessionless requests (not
	// sessions).
	uncounted int
	// byCaller counts the sessions of m that are sessions, by caller key
	// (limits.go's callerKey), for listen.max_sessions_per_caller.
	byCaller map[string]int
}

type downstream struct {
	id        string
	transport string         // DownstreamHTTP, DownstreamSSE, ...
	identity  *auth.Identity // who opened it; nil when the endpoint does not authenticate
	// latest is the identity of its latest request: the same caller (the
	// endpoint refuses a session's id to anyone else), with the access
	// token their client sent last, which a token exchange uses.
	latest atomic.Pointer[auth.Identity]
	level  mcp.LoggingLevel
	subs   map[string]string // URI -> server, on shared sessions; nil until the first
	out    outbox.Queue      // notifications on their way to the client (outbox.go)
	// sessionless marks the go-sdk's session for one request of protocol
	// 2026-07-28 (sessionless.go): tracked while the request runs, so that
	// what the upstream sends during it is routed to it, but not a session
	// in counts and limits.
	sessionless bool
	caller      string // whose it is, for the per-caller count
}

// sse reports whether d is a legacy SSE session.
func (d *downstream) sse() bool { return d.transport == DownstreamSSE }

// track registers ss the first time it is seen; it returns its entry and
// whether it was new.
func (t *sessionTable) track(ss *mcp.ServerSession, transport string, id *auth.Identity, caller string) (*downstream, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[*mcp.ServerSession]*downstream)
	}
	if d, ok := t.m[ss]; ok {
		if id != nil && d.latest.Load() != id {
			d.latest.Store(id)
		}
		return d, false
	}
	t.next++
	d := &downstream{id: "ds-" + strconv.FormatUint(t.next, 10), transport: transport, identity: id}
	// The stateful handler gives every session an id; the stateless one
	// none.
	d.sessionless = transport == DownstreamHTTP && ss.ID() == ""
	t.m[ss] = d
	if d.sse() || d.sessionless {
		t.uncounted++
	} else if caller != "" {
		if t.byCaller == nil {
			t.byCaller = map[string]int{}
		}
		d.caller = caller
		t.byCaller[caller]++
	}
	return d, true
}

// countFor is how many sessions caller holds.
func (t *sessionTable) countFor(caller string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byCaller[caller]
}

// SessionCounts returns how many downstream sessions the host tracks, by
// transport (DownstreamHTTP, DownstreamSSE, DownstreamStdio, ...). Requests
// of protocol 2026-07-28, which has no sessions, are not among them.
func (h *Host) SessionCounts() map[string]int {
	h.sessions.mu.Lock()
	defer h.sessions.mu.Unlock()
	out := map[string]int{}
	for _, d := range h.sessions.m {
		if !d.sessionless {
			out[d.transport]++
		}
	}
	return out
}

// ids returns the session ids of the tracked sessions that have one
// (streamable HTTP's Mcp-Session-Id).
func (t *sessionTable) ids() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]bool, len(t.m))
	for ss := range t.m {
		if id := ss.ID(); id != "" {
			out[id] = true
		}
	}
	return out
}

// lookup returns the entry of a tracked session and its log level.
func (t *sessionTable) lookup(ss *mcp.ServerSession) (*downstream, mcp.LoggingLevel) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.m[ss]
	if d == nil {
		return nil, ""
	}
	return d, d.level
}

func (t *sessionTable) remove(ss *mcp.ServerSession) *downstream {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.m[ss]
	delete(t.m, ss)
	if d != nil && d.caller != "" {
		if t.byCaller[d.caller]--; t.byCaller[d.caller] <= 0 {
			delete(t.byCaller, d.caller)
		}
	}
	if d != nil && (d.sse() || d.sessionless) {
		t.uncounted--
	}
	return d
}

func (t *sessionTable) get(ss *mcp.ServerSession) *downstream {
	if d := t.m[ss]; d != nil {
		return d
	}
	return &downstream{} // an untracked session: nothing persists
}

func (t *sessionTable) id(ss *mcp.ServerSession) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.get(ss).id
}

func (t *sessionTable) setLevel(ss *mcp.ServerSession, level mcp.LoggingLevel) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.get(ss).level = level
}

func (t *sessionTable) level(ss *mcp.ServerSession) mcp.LoggingLevel {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.get(ss).level
}

// mostVerbose is the most verbose level any session set, or "".
func (t *sessionTable) mostVerbose() mcp.LoggingLevel {
	t.mu.Lock()
	defer t.mu.Unlock()
	best := len(wire.LogLevels)
	for _, d := range t.m {
		if i, ok := wire.LogRank(d.level); ok && i < best {
			best = i
		}
	}
	if best == len(wire.LogLevels) {
		return ""
	}
	return mcp.LoggingLevel(wire.LogLevels[best])
}

// logging returns the sessions that set a log level.
func (t *sessionTable) logging() []*mcp.ServerSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*mcp.ServerSession
	for ss, d := range t.m {
		if d.level != "" {
			out = append(out, ss)
		}
	}
	return out
}

// addSub records a shared subscription; false if ss already had it.
func (t *sessionTable) addSub(ss *mcp.ServerSession, uri, server string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.m[ss]
	if !ok {
		return true // untracked: subscribe, nothing to release later
	}
	if _, dup := d.subs[uri]; dup {
		return false
	}
	if d.subs == nil {
		d.subs = make(map[string]string)
	}
	d.subs[uri] = server
	return true
}

func (t *sessionTable) dropSub(ss *mcp.ServerSession, uri string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.m[ss]
	if !ok {
		return "", false
	}
	server, ok := d.subs[uri]
	delete(d.subs, uri)
	return server, ok
}

func (t *sessionTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// countNotSSE is count without the legacy SSE sessions and the
// sessionless requests.
func (t *sessionTable) countNotSSE() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m) - t.uncounted
}

// trackSession starts watching a downstream session the first time a
// request from it arrives, and returns its entry (nil for no session).
func (h *Host) trackSession(ctx context.Context, ss *mcp.ServerSession, transport string, id *auth.Identity) *downstream {
	if ss == nil {
		return nil
	}
	d, isNew := h.sessions.track(ss, transport, id, listener.CallerKeyOf(ctx, id))
	if isNew {
		// A stdio client is the only one: when it stops reading, its
		// notifications are dropped but its session is not closed.
		d.out.KeepOpen.Store(transport == DownstreamStdio)
		go func() {
			_ = ss.Wait()
			h.sessionEnded(ss)
		}()
	}
	return d
}

// notify queues a notification for a downstream session; it never waits
// for the client (outbox.go).
func (h *Host) notify(ss *mcp.ServerSession, n outbox.Note) {
	d, level := h.sessions.lookup(ss)
	if d == nil {
		h.log.Debug("notification for a session that is gone dropped", "kind", n.Kind.String())
		return
	}
	if n.Kind == outbox.NoteLog && !levelAllows(level, n.Log.Level) {
		return // the go-sdk would not send it either
	}
	d.out.Push(h.outboxSender(ss, d), n)
}

func (h *Host) outboxSender(ss *mcp.ServerSession, d *downstream) outbox.Sender {
	stuck := h.cfg.Listen.WriteTimeout
	if stuck <= 0 {
		stuck = outbox.DefaultStuckAfter
	}
	return outbox.Sender{Session: ss, ID: d.id, StuckAfter: stuck, Log: h.log, Govern: h.governNote(ss, d.transport)}
}

// levelAllows reports whether a client that set level wants a message at
// msg: nothing before it set one, as the go-sdk does.
func levelAllows(level, msg mcp.LoggingLevel) bool {
	if level == "" {
		return false
	}
	li, lok := wire.LogRank(level)
	mi, mok := wire.LogRank(msg)
	return !lok || !mok || mi >= li // unknown levels: let the go-sdk judge
}

// sessionEnded ends the per-client upstream sessions of ss and releases
// its shared subscriptions, so no upstream session or process outlives the
// client it served.
func (h *Host) sessionEnded(ss *mcp.ServerSession) {
	d := h.sessions.remove(ss)
	if id := ss.ID(); id != "" {
		h.owners.Forget("mcp:" + id)
	}
	if d != nil {
		d.out.Closed(h.outboxSender(ss, d))
	}
	h.fastSessions.forget(ss)
	h.elicitations.forget(ss)
	sessionless := d != nil && d.sessionless
	drop := func() {
		for _, u := range h.upstreamList() {
			u.DropClient(ss, sessionless)
		}
	}
	if !sessionless || !h.roundHolds.putOff(ss, drop) {
		drop()
	}
	if d == nil {
		return
	}
	// A shared session's log level is left as it is: each client's own
	// level filters what it is sent.
	for uri, server := range d.subs {
		h.releaseSub(context.Background(), ss, server, uri)
	}
}
