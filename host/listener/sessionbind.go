package listener

import (
	"bufio"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/auth"
)

// SessionOwners maps HTTP session ids to the identity key that opened them.
// An entry goes when its session ends; one whose session never got going
// (an initialize the go-sdk answered without the host seeing it) is pruned
// once the map grows past a bound.
type SessionOwners struct {
	mu sync.Mutex
	m  map[string]sessionOwner // "mcp:" or "sse:" + session id
}

type sessionOwner struct {
	key string // Identity.Key()
	at  time.Time
}

// ownersPruneAt is the size past which set prunes entries of sessions that
// are not tracked.
const ownersPruneAt = 1024

func (o *SessionOwners) set(sid, owner string, live func() map[string]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]sessionOwner{}
	}
	if len(o.m) >= ownersPruneAt {
		ids, old := live(), time.Now().Add(-time.Minute)
		for k, v := range o.m {
			if id, ok := strings.CutPrefix(k, "mcp:"); ok && !ids[id] && v.at.Before(old) {
				delete(o.m, k)
			}
		}
	}
	o.m[sid] = sessionOwner{key: owner, at: time.Now()}
}

func (o *SessionOwners) get(sid string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, ok := o.m[sid]
	return owner.key, ok
}

func (o *SessionOwners) Forget(sid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, sid)
}

// BindSessions records who opens each HTTP session and refuses, with 404,
// a request for a session that another identity opened. It runs after the
// authenticator, so every request has an identity.
func BindSessions(next http.Handler, owners *SessionOwners, live func() map[string]bool, log hclog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := auth.FromContext(r.Context())
		var sid string
		// A toolset's endpoints (/mcp/NAME, /sse/NAME) are bound alike:
		// session ids are unique across endpoints.
		switch Endpoint(r.URL.Path) {
		case "/mcp":
			if v := r.Header.Get("Mcp-Session-Id"); v != "" {
				sid = "mcp:" + v
			} else if r.Method == http.MethodPost {
				w = &ownerRecorder{ResponseWriter: w, record: func(v string) { owners.set("mcp:"+v, id.Key(), live) }, fromHeader: "Mcp-Session-Id"}
			}
		case "/sse":
			switch r.Method {
			case http.MethodPost:
				if v := r.URL.Query().Get("sessionid"); v != "" {
					sid = "sse:" + v
				}
			case http.MethodGet:
				var opened string
				w = &ownerRecorder{ResponseWriter: w, record: func(v string) { opened = "sse:" + v; owners.set(opened, id.Key(), live) }}
				defer func() {
					if opened != "" {
						owners.Forget(opened)
					}
				}()
			}
		}
		if sid != "" {
			if owner, ok := owners.get(sid); ok && owner != id.Key() {
				log.Warn("refused a request for another identity's session", "caller", id.String(), "path", r.URL.Path, "remote", r.RemoteAddr)
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			if r.Method == http.MethodDelete {
				defer owners.Forget(sid)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Endpoint is "/mcp" for /mcp and a toolset's /mcp/NAME, "/sse" for /sse
// and /sse/NAME, and path itself otherwise: what the limits, the session
// binding and the drain take alike.
func Endpoint(path string) string {
	for _, e := range []string{"/mcp", "/sse"} {
		if path == e || strings.HasPrefix(path, e+"/") {
			return e
		}
	}
	return path
}

// ownerRecorder catches the id of the session a response opens: from a
// header (streamable HTTP's Mcp-Session-Id), or from the endpoint event an
// SSE stream starts with ("data: /sse?sessionid=ID").
type ownerRecorder struct {
	http.ResponseWriter
	record     func(sessionID string)
	fromHeader string
	done       bool
}

func (o *ownerRecorder) WriteHeader(code int) {
	o.catchHeader()
	o.ResponseWriter.WriteHeader(code)
}

func (o *ownerRecorder) Write(b []byte) (int, error) {
	o.catchHeader()
	if !o.done && o.fromHeader == "" {
		o.done = true
		if v := endpointSessionID(b); v != "" {
			o.record(v)
		}
	}
	return o.ResponseWriter.Write(b)
}

func (o *ownerRecorder) catchHeader() {
	if o.done || o.fromHeader == "" {
		return
	}
	o.done = true
	if v := o.ResponseWriter.Header().Get(o.fromHeader); v != "" {
		o.record(v)
	}
}

func (o *ownerRecorder) Flush() {
	o.catchHeader()
	_ = http.NewResponseController(o.ResponseWriter).Flush()
}

func (o *ownerRecorder) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// endpointSessionID reads the session id of an SSE endpoint event.
func endpointSessionID(b []byte) string {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		_, q, ok := strings.Cut(strings.TrimSpace(data), "sessionid=")
		if !ok {
			continue
		}
		if i := strings.IndexAny(q, "&#"); i >= 0 {
			q = q[:i]
		}
		return q
	}
	return ""
}
