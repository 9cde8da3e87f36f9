package listener

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// The session and caller limits of listen, in front of MCP: the gateway
// gives them its counts of sessions.

// LimitSessions refuses requests that would open a new downstream session
// (a POST to /mcp without Mcp-Session-Id, unless it is of protocol
// 2026-07-28, which has no sessions; a GET of /sse) while max are
// open. A legacy SSE session is counted by its stream, from the moment the
// GET arrives until it ends (the session is tracked only from its first
// message, which a client need never send), a streamable one from its
// initialize on. Initializes that arrive together when one place is left
// may all pass (the session is made inside the request): the cap can be
// overshot by that many, which max_connections bounds. open counts the
// sessions open but legacy SSE ones, which LimitSessions counts itself.
func LimitSessions(next http.Handler, max int, open func() int, log hclog.Logger) http.Handler {
	var sseStreams atomic.Int64
	var full atomic.Bool // warned since a session last opened
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opens, sse := OpensSession(r)
		if !opens || max <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		n := int64(open())
		if sse {
			// Its place is taken before the total is read, so streams
			// opened together cannot all slip under the cap.
			n += sseStreams.Add(1)
			defer sseStreams.Add(-1)
		} else {
			n += sseStreams.Load() + 1
		}
		if n > int64(max) {
			if !full.Swap(true) { // once per episode: refusals are what an attack makes many of
				log.Warn("refusing new downstream sessions: the session limit is reached", "max_sessions", max)
			}
			WriteUnavailable(w, fmt.Sprintf("mcphost: too many sessions (listen.max_sessions = %d); retry later, or close idle sessions (they end after listen.session_timeout)", max))
			return
		}
		full.Store(false)
		next.ServeHTTP(w, r)
	})
}

// LimitCallers applies the per-caller limits of l (max_streams_per_caller,
// max_sessions_per_caller; an identity's default to a quarter of the
// totals). sessionsOf counts a caller key's sessions but legacy SSE ones,
// which it counts itself. It runs after authentication.
func LimitCallers(next http.Handler, l Config, sessionsOf func(key string) int, log hclog.Logger) http.Handler {
	var mu sync.Mutex
	inFlight := map[string]int{}
	sseOpen := map[string]int{} // a legacy SSE session is its stream (LimitSessions)
	var warned sync.Map         // caller -> struct{}: one warning per caller and episode
	refuse := func(w http.ResponseWriter, key, msg string) {
		if _, loaded := warned.LoadOrStore(key, struct{}{}); !loaded {
			log.Warn("refusing a caller over its share", "caller", key, "reason", msg)
		}
		WriteBusy(w, http.StatusTooManyRequests, msg)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		key := CallerKey(r)
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
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), CallerCtxKey{}, key)))
			return
		}
		opens, sse := OpensSession(r)
		mu.Lock()
		if maxStreams > 0 && inFlight[key] >= maxStreams {
			mu.Unlock()
			refuse(w, key, fmt.Sprintf("mcphost: this caller has %d requests open (listen.max_streams_per_caller = %d); close event streams it no longer reads, or raise the limit", maxStreams, maxStreams))
			return
		}
		if opens && maxSessions > 0 && sseOpen[key]+sessionsOf(key) >= maxSessions {
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
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), CallerCtxKey{}, key)))
	})
}
