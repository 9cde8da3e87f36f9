package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/listener"
)

// ErrShuttingDown is the cause of an upstream request that was still in
// flight when the drain gave up on it (listen.drain_timeout): it is
// cancelled, and its caller answered with this error, rather than cut
// with its connection.
var ErrShuttingDown = errors.New("mcphost is shutting down: the request was still running when listen.drain_timeout ended; send it again")

// cutGrace bounds how long Drain, having cancelled the requests still in
// flight, waits for their answers to be written.
const cutGrace = time.Second

// drainState is the HTTP endpoint's graceful drain: once draining,
// /healthz fails and new sessions are refused, while the requests in
// flight, and those of the sessions already open, are served.
type drainState struct {
	draining atomic.Bool
	done     atomic.Bool  // Drain returned: what was in flight finished or was given up on
	inflight atomic.Int64 // requests other than GET (calls, notifications, session ends)
	// forwarding counts the upstream requests in flight (bound): a legacy
	// SSE client's call is one, though its POST was answered 202 at once.
	forwarding atomic.Int64
	// cut ends, with ErrShuttingDown as its cause, when the drain times
	// out: the upstream requests still in flight (forward) end with it.
	cut    context.Context
	cutAll context.CancelCauseFunc
}

func (d *drainState) init() { d.cut, d.cutAll = context.WithCancelCause(context.Background()) }

// bound ties ctx, an upstream request's, to the drain: it is cancelled
// with ErrShuttingDown if the drain times out before it ends. stop
// releases what bound set up.
func (d *drainState) bound(ctx context.Context) (_ context.Context, stop func()) {
	d.forwarding.Add(1)
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(d.cut, func() { cancel(ErrShuttingDown) })
	return ctx, func() { unhook(); cancel(nil); d.forwarding.Add(-1) }
}

// answering reports whether a request or an upstream call is still in
// flight (a legacy SSE client's call is answered on its stream, after its
// POST ended).
func (h *Host) answering() bool {
	return h.drain.inflight.Load() > 0 || h.drain.forwarding.Load() > 0
}

// busy is answering, or a call in rounds waiting for its client's retry:
// what the drain waits for.
func (h *Host) busy() bool { return h.answering() || h.rounds.Waiting() > 0 }

// Draining reports whether Drain has been called.
func (h *Host) Draining() bool { return h.drain.draining.Load() }

// Drained is upstreamEvents' view of Draining: Close after a drain does
// not wait for upstream calls a second time.
func (h *Host) Drained() bool { return h.drain.done.Load() }

// Drain starts the graceful drain of the HTTP endpoint, for a replica that
// is about to stop (SIGTERM): /healthz answers 503 "draining", so that
// load balancers send no more here; new sessions (a 2025-11-25 initialize,
// a legacy SSE stream) are refused with 503 and Retry-After, so that
// clients open theirs on another replica; the requests of the sessions
// already open, and 2026-07-28 requests, are still served. It then waits
// until no request is in flight (open GET streams do not count), no
// upstream call runs (a legacy SSE client's, whose POST was answered at
// once, is answered on its stream) and no 2026-07-28 call in rounds waits
// for its client's retry (rounds.go), or ctx ends; in that case it
// cancels the upstream requests still in flight, whose callers answer
// with ErrShuttingDown (a tool call with an error result), waits up to a
// second for those answers, and returns ctx's error. The caller then stops the server; closing the host after
// Drain returned does not wait for upstream calls again.
func (h *Host) Drain(ctx context.Context) error {
	if !h.drain.draining.Swap(true) {
		h.log.Info("draining: refusing new sessions and failing /healthz; waiting for the requests in flight", "in_flight", h.drain.inflight.Load(), "upstream_calls", h.drain.forwarding.Load(), "in_rounds", h.rounds.Waiting())
	}
	defer h.drain.done.Store(true)
	if wire.WaitUntil(ctx, func() bool { return !h.busy() }) {
		return nil
	}
	h.log.Warn("draining: requests still in flight when the drain timeout ended; cancelling their upstream calls and answering them with an error", "in_flight", h.drain.inflight.Load(), "upstream_calls", h.drain.forwarding.Load(), "in_rounds", h.rounds.Waiting())
	h.drain.cutAll(ErrShuttingDown)
	grace, cancel := context.WithTimeout(context.Background(), cutGrace)
	defer cancel()
	if !wire.WaitUntil(grace, func() bool { return !h.answering() }) {
		h.log.Warn("draining: requests still unanswered after the cancel; their connections will be closed", "in_flight", h.drain.inflight.Load())
	}
	return ctx.Err()
}

// drainGate counts the requests in flight and, while draining, refuses
// the requests that open a session.
func (h *Host) drainGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if h.Draining() && listener.Endpoint(r.URL.Path) == "/sse" {
				listener.WriteUnavailable(w, "mcphost: this replica is shutting down; open the session on another")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		h.drain.inflight.Add(1)
		defer h.drain.inflight.Add(-1)
		if h.Draining() && listener.Endpoint(r.URL.Path) == "/mcp" && r.Header.Get("Mcp-Session-Id") == "" && !wire.Sessionless(r) {
			// Without a session, a request before 2026-07-28 opens one
			// (an initialize, alone or in a batch) or is refused by the
			// go-sdk anyway: either way, another replica should have it.
			w.Header().Set("Connection", "close")
			listener.WriteUnavailable(w, "mcphost: this replica is shutting down; initialize again, on another")
			return
		}
		next.ServeHTTP(w, r)
	})
}
