package host

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphost-project/mcphost/host/internal/wire"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/auth"
)

// Bounds on what downstream clients can hold: time to send a request, time
// a write may block, open connections and sessions.
//
// net/http's own ReadTimeout and WriteTimeout count from the start of a
// request, so they would cut the long-lived streams MCP uses (a GET's
// event stream, a tools/call answered as a stream). The deadlines here are
// per request instead: reading a request's body has ReadTimeout, after
// which the read deadline is lifted (a deadline left on the connection
// would cancel the request's context once it passed), and every write has
// WriteTimeout from when it starts, so a stream may last as long as it
// writes, but a client that stops reading fails the write after
// WriteTimeout instead of holding it forever.

// withDeadlines applies the per-request read and write deadlines.
func withDeadlines(next http.Handler, read, write time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dl, ok := w.(deadliner)
		if !ok || read <= 0 || write <= 0 {
			next.ServeHTTP(w, r) // not net/http's writer (an embedder's): its server's own timeouts apply
			return
		}
		// One allocation for both wrappers: this runs on every request.
		dd := &struct {
			deadlineWriter
			deadlineBody
		}{deadlineWriter{ResponseWriter: w, dl: dl, d: write}, deadlineBody{ReadCloser: r.Body, dl: dl}}
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			_ = dl.SetReadDeadline(time.Now().Add(read))
			r.Body = &dd.deadlineBody
		}
		dw := &dd.deadlineWriter
		dw.extend()
		next.ServeHTTP(dw, r)
		dw.extend() // net/http flushes what is left after the handler returns
	})
}

// deadliner is what net/http's ResponseWriter offers for
// http.ResponseController; asserting it once saves the controller's
// allocation per request.
type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// deadlineBody lifts the read deadline once the body has been read: net/http
// then watches the connection for the client going away, and a deadline
// passing there would cancel the request (a stream) for no reason.
type deadlineBody struct {
	io.ReadCloser
	dl   deadliner
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.dl.SetReadDeadline(time.Time{})
	}
	return n, err
}

// deadlineWriter gives each write d to complete. Setting a deadline is
// cheap but not free, so it is only moved when less than half of d is
// left.
type deadlineWriter struct {
	http.ResponseWriter
	dl    deadliner
	d     time.Duration
	until atomic.Int64 // unix nanos of the deadline set
}

func (w *deadlineWriter) extend() {
	now := time.Now()
	if time.Duration(w.until.Load()-now.UnixNano()) > w.d/2 {
		return
	}
	until := now.Add(w.d)
	w.until.Store(until.UnixNano())
	_ = w.dl.SetWriteDeadline(until)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) Flush() {
	w.extend()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach net/http's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeUnavailable answers 503 with a JSON-RPC error body and Retry-After,
// so that MCP clients and people both read why.
func writeUnavailable(w http.ResponseWriter, msg string) {
	writeBusy(w, http.StatusServiceUnavailable, msg)
}

// writeBusy answers status (503, 429) with a JSON-RPC error body and
// Retry-After.
func writeBusy(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	w.WriteHeader(status)
	_, _ = w.Write(unavailableBody(msg))
}

// opensSession reports whether r would open a downstream session: a POST
// to /mcp without Mcp-Session-Id, unless it is of protocol 2026-07-28,
// which has no sessions; or a GET of /sse (sse), whose stream is its
// session.
func opensSession(r *http.Request) (opens, sse bool) {
	sse = r.URL.Path == "/sse" && r.Method == http.MethodGet
	return sse || (r.URL.Path == "/mcp" && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && !sessionless(r)), sse
}

const retryAfterSeconds = 5

func unavailableBody(msg string) []byte { return wire.ErrorBody(codeServerBusy, msg) }

// codeServerBusy is in JSON-RPC's range for implementation-defined server
// errors.
const codeServerBusy = -32000

// limitSessions refuses requests that would open a new downstream session
// (a POST to /mcp without Mcp-Session-Id, unless it is of protocol
// 2026-07-28, which has no sessions; a GET of /sse) while max are
// open. A legacy SSE session is counted by its stream, from the moment the
// GET arrives until it ends (the session is tracked only from its first
// message, which a client need never send), a streamable one from its
// initialize on. Initializes that arrive together when one place is left
// may all pass (the session is made inside the request): the cap can be
// overshot by that many, which max_connections bounds.
func (h *Host) limitSessions(next http.Handler, max int) http.Handler {
	var sseStreams atomic.Int64
	var full atomic.Bool // warned since a session last opened
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opens, sse := opensSession(r)
		if !opens || max <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		open := int64(h.sessions.countNotSSE())
		if sse {
			// Its place is taken before the total is read, so streams
			// opened together cannot all slip under the cap.
			open += sseStreams.Add(1)
			defer sseStreams.Add(-1)
		} else {
			open += sseStreams.Load() + 1
		}
		if open > int64(max) {
			if !full.Swap(true) { // once per episode: refusals are what an attack makes many of
				h.log.Warn("refusing new downstream sessions: the session limit is reached", "max_sessions", max)
			}
			writeUnavailable(w, fmt.Sprintf("mcphost: too many sessions (listen.max_sessions = %d); retry later, or close idle sessions (they end after listen.session_timeout)", max))
			return
		}
		full.Store(false)
		next.ServeHTTP(w, r)
	})
}

// connLimiter caps a listener's open connections. At the cap, a new
// connection first makes room by closing the connection that has waited
// longest without a request (an idle keep-alive one, or one that has sent
// nothing yet); only when every connection is busy with a request is the
// new one answered 503 and closed. Idle connections cannot lock out a
// client that has work to do.
type connLimiter struct {
	net.Listener
	max     int
	log     hclog.Logger
	refuser chan struct{} // bounds the goroutines writing refusals

	mu    sync.Mutex
	conns map[*limitedConn]struct{}
	full  bool // the cap was hit since the last warning
}

type limitedConn struct {
	net.Conn
	l      *connLimiter
	idle   bool      // no request in progress (under l.mu)
	since  time.Time // when idle last changed (under l.mu)
	closed atomic.Bool
}

// LimitConnections gives another HTTP listener (the admin API's) the MCP
// listener's cap on open connections: at max, the longest-idle connection
// makes room, and only when every one is busy is a new one refused (503).
// Set the server's ConnState to the func returned.
func LimitConnections(ln net.Listener, max int, log hclog.Logger) (net.Listener, func(net.Conn, http.ConnState)) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	l := newConnLimiter(ln, max, log)
	return l, l.connState
}

func newConnLimiter(ln net.Listener, max int, log hclog.Logger) *connLimiter {
	return &connLimiter{Listener: ln, max: max, log: log, refuser: make(chan struct{}, 16), conns: make(map[*limitedConn]struct{})}
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l, idle: true, since: time.Now()}
		l.mu.Lock()
		var victim *limitedConn
		if len(l.conns) >= l.max {
			for o := range l.conns {
				if o.idle && (victim == nil || o.since.Before(victim.since)) {
					victim = o
				}
			}
			if victim == nil {
				warn := !l.full
				l.full = true
				l.mu.Unlock()
				if warn {
					l.log.Warn("refusing connections: every connection is busy (listen.max_connections)", "max_connections", l.max)
				}
				l.refuse(c)
				continue
			}
			delete(l.conns, victim)
		} else {
			l.full = false
		}
		l.conns[lc] = struct{}{}
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
		}
		return lc, nil
	}
}

var refusedConn = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: " + strconv.Itoa(retryAfterSeconds) + "\r\nConnection: close\r\nContent-Length: ")

// refuse answers 503 on a connection over the cap and closes it, never
// waiting on the client for long.
func (l *connLimiter) refuse(c net.Conn) {
	select {
	case l.refuser <- struct{}{}:
	default:
		c.Close() // too many refusals at once: just close
		return
	}
	go func() {
		defer func() { <-l.refuser }()
		defer c.Close()
		body := unavailableBody(fmt.Sprintf("mcphost: too many connections (listen.max_connections = %d); retry later", l.max))
		_ = c.SetDeadline(time.Now().Add(time.Second))
		msg := append(append(append([]byte(nil), refusedConn...), strconv.Itoa(len(body))+"\r\n\r\n"...), body...)
		_, _ = c.Write(msg)
	}()
}

// connState is http.Server.ConnState: it records which connections are
// between requests.
func (l *connLimiter) connState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateActive:
		lc.idle, lc.since = false, time.Now()
	case http.StateIdle:
		lc.idle, lc.since = true, time.Now()
	case http.StateHijacked, http.StateClosed:
		delete(l.conns, lc)
	}
}

func (c *limitedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	}
	return c.Conn.Close()
}

// One caller must not take what every other client needs. A caller is an
// identity (listen.auth), or a remote address when the endpoint does not
// authenticate. Each may have at most listen.max_streams_per_caller
// requests in flight (an event stream, or a call being answered, holds a
// connection for as long as it lasts) and hold at most
// listen.max_sessions_per_caller sessions; past either, 429 with the limit
// named. /healthz is never counted, so probes get through whatever one
// caller does, and the defaults for identities (a quarter of
// max_connections and of max_sessions) leave the rest to the others. An
// address is limited only when the limits are set: without listen.auth
// every local client, or every client behind one proxy, is one address.

// callerCtxKey carries a request's caller key to the session it opens.
type callerCtxKey struct{}

// callerKey is who r is, for the per-caller limits.
func callerKey(r *http.Request) string {
	if id := auth.FromContext(r.Context()); id != nil {
		return "id:" + id.Key()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// callerKeyOf is the caller key of a request's context: the identity's,
// or the one limitCallers put there.
func callerKeyOf(ctx context.Context, id *auth.Identity) string {
	if id != nil {
		return "id:" + id.Key()
	}
	k, _ := ctx.Value(callerCtxKey{}).(string)
	return k
}

// limitCallers applies the per-caller limits (l's, zero as above); it runs
// after authentication.
func (h *Host) limitCallers(next http.Handler, l Listen) http.Handler {
	var mu sync.Mutex
	inFlight := map[string]int{}
	sseOpen := map[string]int{} // a legacy SSE session is its stream (limitSessions)
	var warned sync.Map         // caller -> struct{}: one warning per caller and episode
	refuse := func(w http.ResponseWriter, key, msg string) {
		if _, loaded := warned.LoadOrStore(key, struct{}{}); !loaded {
			h.log.Warn("refusing a caller over its share", "caller", key, "reason", msg)
		}
		writeBusy(w, http.StatusTooManyRequests, msg)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		key := callerKey(r)
		maxStreams, maxSessions := l.MaxStreamsPerCaller, l.MaxSessionsPerCaller
		if strings.HasPrefix(key, "id:") {
			if maxStreams == 0 {
				maxStreams = max(l.MaxConnections/4, 1)
			}
			if maxSessions == 0 {
				maxSessions = max(l.MaxSessions/4, 1)
			}
		}
		if maxStreams == 0 && maxSessions == 0 {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerCtxKey{}, key)))
			return
		}
		opens, sse := opensSession(r)
		mu.Lock()
		if maxStreams > 0 && inFlight[key] >= maxStreams {
			mu.Unlock()
			refuse(w, key, fmt.Sprintf("mcphost: this caller has %d requests open (listen.max_streams_per_caller = %d); close event streams it no longer reads, or raise the limit", maxStreams, maxStreams))
			return
		}
		if opens && maxSessions > 0 && sseOpen[key]+h.sessions.countFor(key) >= maxSessions {
			mu.Unlock()
			refuse(w, key, fmt.Sprintf("mcphost: this caller has %d sessions (listen.max_sessions_per_caller = %d); close sessions it no longer uses (idle ones end after listen.session_timeout)", maxSessions, maxSessions))
			return
		}
		inFlight[key]++
		if sse {
			sseOpen[key]++
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			if sse {
				if sseOpen[key]--; sseOpen[key] <= 0 {
					delete(sseOpen, key)
				}
			}
			if inFlight[key]--; inFlight[key] <= 0 {
				delete(inFlight, key)
				warned.Delete(key)
			}
			mu.Unlock()
		}()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerCtxKey{}, key)))
	})
}
