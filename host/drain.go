package host

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// drainState is the HTTP endpoint's graceful drain: once draining,
// /healthz fails and new sessions are refused, while the requests in
// flight, and those of the sessions already open, are served.
type drainState struct {
	draining atomic.Bool
	done     atomic.Bool  // Drain returned: what was in flight finished or was given up on
	inflight atomic.Int64 // requests other than GET (calls, notifications, session ends)
}

// Draining reports whether Drain has been called.
func (h *Host) Draining() bool { return h.drain.draining.Load() }

// drained is upstreamEvents' view of Draining: Close after a drain does
// not wait for upstream calls a second time.
func (h *Host) drained() bool { return h.drain.done.Load() }

// Drain starts the graceful drain of the HTTP endpoint, for a replica that
// is about to stop (SIGTERM): /healthz answers 503 "draining", so that
// load balancers send no more here; new sessions (a 2025-11-25 initialize,
// a legacy SSE stream) are refused with 503 and Retry-After, so that
// clients open theirs on another replica; the requests of the sessions
// already open, and 2026-07-28 requests, are still served. It then waits
// until no request is in flight (open GET streams do not count) and no
// 2026-07-28 call in rounds waits for its client's retry (rounds.go), or
// ctx ends, and returns ctx's error in that case. The caller then stops the
// server; closing the host after Drain returned does not wait for
// upstream calls again.
func (h *Host) Drain(ctx context.Context) error {
	if !h.drain.draining.Swap(true) {
		h.log.Info("draining: refusing new sessions and failing /healthz; waiting for the requests in flight", "in_flight", h.drain.inflight.Load(), "in_rounds", h.rounds.waiting())
	}
	defer h.drain.done.Store(true)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for h.drain.inflight.Load() > 0 || h.rounds.waiting() > 0 {
		select {
		case <-ctx.Done():
			h.log.Warn("draining: requests still in flight when the drain timeout ended", "in_flight", h.drain.inflight.Load(), "in_rounds", h.rounds.waiting())
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// drainGate counts the requests in flight and, while draining, refuses
// the requests that open a session.
func (h *Host) drainGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if h.Draining() && r.URL.Path == "/sse" {
				writeUnavailable(w, "mcphost: this replica is shutting down; open the session on another")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		h.drain.inflight.Add(1)
		defer h.drain.inflight.Add(-1)
		if h.Draining() && r.URL.Path == "/mcp" && r.Header.Get("Mcp-Session-Id") == "" && !sessionless(r) {
			// Without a session, a request before 2026-07-28 opens one
			// (an initialize, alone or in a batch) or is refused by the
			// go-sdk anyway: either way, another replica should have it.
			w.Header().Set("Connection", "close")
			writeUnavailable(w, "mcphost: this replica is shutting down; initialize again, on another")
			return
		}
		next.ServeHTTP(w, r)
	})
}
