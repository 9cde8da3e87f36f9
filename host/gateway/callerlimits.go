package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcphost-project/mcphost/host/listener"
)

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
		opens, sse := listener.OpensSession(r)
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
			listener.WriteUnavailable(w, fmt.Sprintf("mcphost: too many sessions (listen.max_sessions = %d); retry later, or close idle sessions (they end after listen.session_timeout)", max))
			return
		}
		full.Store(false)
		next.ServeHTTP(w, r)
	})
}

// limitCallers applies the per-caller limits (l's, zero as above); it runs
// after authentication.
func (h *Host) limitCallers(next http.Handler, l listener.Config) http.Handler {
	var mu sync.Mutex
	inFlight := map[string]int{}
	sseOpen := map[string]int{} // a legacy SSE session is its stream (limitSessions)
	var warned sync.Map         // caller -> struct{}: one warning per caller and episode
	refuse := func(w http.ResponseWriter, key, msg string) {
		if _, loaded := warned.LoadOrStore(key, struct{}{}); !loaded {
			h.log.Warn("refusing a caller over its share", "caller", key, "reason", msg)
		}
		listener.WriteBusy(w, http.StatusTooManyRequests, msg)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		key := listener.CallerKey(r)
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
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), listener.CallerCtxKey{}, key)))
			return
		}
		opens, sse := listener.OpensSession(r)
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
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), listener.CallerCtxKey{}, key)))
	})
}
