package listener

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/internal/wire"
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

// WithDeadlines applies the per-request read and write deadlines.
func WithDeadlines(next http.Handler, read, write time.Duration) http.Handler {
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

// WriteUnavailable answers 503 with a JSON-RPC error body and Retry-After,
// so that MCP clients and people both read why.
func WriteUnavailable(w http.ResponseWriter, msg string) {
	WriteBusy(w, http.StatusServiceUnavailable, msg)
}

// WriteBusy answers status (503, 429) with a JSON-RPC error body and
// Retry-After.
func WriteBusy(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	w.WriteHeader(status)
	_, _ = w.Write(unavailableBody(msg))
}

// OpensSession reports whether r would open a downstream session: a POST
// to /mcp (or a toolset's /mcp/NAME) without Mcp-Session-Id, unless it is
// of protocol 2026-07-28, which has no sessions; or a GET of /sse (or
// /sse/NAME: sse), whose stream is its session.
func OpensSession(r *http.Request) (opens, sse bool) {
	endpoint := Endpoint(r.URL.Path)
	sse = endpoint == "/sse" && r.Method == http.MethodGet
	return sse || (endpoint == "/mcp" && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && !wire.Sessionless(r)), sse
}

const retryAfterSeconds = 5

func unavailableBody(msg string) []byte { return wire.ErrorBody(codeServerBusy, msg) }

// codeServerBusy is in JSON-RPC's range for implementation-defined server
// errors.
const codeServerBusy = -32000

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
	l := NewConnLimiter(ln, max, log)
	return l, l.ConnState
}

func NewConnLimiter(ln net.Listener, max int, log hclog.Logger) *connLimiter {
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

// ConnState is http.Server.ConnState: it records which connections are
// between requests.
func (l *connLimiter) ConnState(c net.Conn, s http.ConnState) {
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

// CallerCtxKey carries a request's caller key to the session it opens.
type CallerCtxKey struct{}

// CallerKey is who r is, for the per-caller limits.
func CallerKey(r *http.Request) string {
	if id := auth.FromContext(r.Context()); id != nil {
		return "id:" + id.Key()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// CallerKeyOf is the caller key of a request's context: the identity's,
// or the one LimitCallers put there.
func CallerKeyOf(ctx context.Context, id *auth.Identity) string {
	if id != nil {
		return "id:" + id.Key()
	}
	k, _ := ctx.Value(CallerCtxKey{}).(string)
	return k
}
