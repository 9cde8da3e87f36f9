package host

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
)

// Identities: who a downstream client is, and which sessions it owns.
//
// The Authenticator (package auth) turns an HTTP request's bearer token
// into an identity. A session belongs to the identity that opened it: the
// same session id presented by anyone else is answered 404, as if it did
// not exist, so a stolen id reveals nothing. A session's entry in the
// session table keeps its identity, which every hook's Caller carries.

// DefaultAdminGroup is the group whose keys may read /status when
// listen.auth names no admin_groups (OAuth tokens then never may); the
// auth_token shorthand's key is in it.
const DefaultAdminGroup = "admins"

// newAuthenticator builds the endpoint's authenticator from l.Auth and the
// auth_token shorthand; nil when neither is set.
func newAuthenticator(l Listen, log hclog.Logger) (*auth.Authenticator, error) {
	var cfg auth.Config
	if l.Auth != nil {
		cfg = *l.Auth
		cfg.Keys = append([]auth.Key(nil), cfg.Keys...)
	}
	if l.AuthToken != "" {
		k := auth.KeyFromValue("auth_token", l.AuthToken)
		k.Subject, k.Groups = "token", []string{DefaultAdminGroup}
		cfg.Keys = append(cfg.Keys, k)
	}
	if !cfg.Enabled() {
		return nil, nil
	}
	if len(cfg.AdminGroups) == 0 {
		// The default group counts for keys only: an identity provider's
		// groups claim could name "admins" for anyone.
		cfg.AdminGroups, cfg.AdminKeysOnly = []string{DefaultAdminGroup}, true
	}
	return auth.New(cfg, log)
}

// stdioIdentity is the identity listen.auth gives a stdio client.
func (h *Host) stdioIdentity() *auth.Identity {
	return h.authn.Load().StdioIdentity()
}

// authenticate runs the current authenticator (none: every request passes
// as it is). Reconfigure replaces it, so a key removed from the config stops
// working at the reload.
func (h *Host) authenticate(next http.Handler) http.Handler {
	type built struct {
		a *auth.Authenticator
		h http.Handler
	}
	var cur atomic.Pointer[built]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := h.authn.Load()
		if a == nil {
			next.ServeHTTP(w, r)
			return
		}
		b := cur.Load()
		if b == nil || b.a != a {
			b = &built{a: a, h: a.Middleware(next)}
			cur.Store(b)
		}
		b.h.ServeHTTP(w, r)
	})
}

// identityOf returns the identity of the client behind req: the one the
// endpoint authenticated (carried as the go-sdk's TokenInfo over
// streamable HTTP, in the session's context over SSE), the configured one
// for stdio, or, for an embedder that wraps the handler in the go-sdk's own
// bearer-token middleware, its TokenInfo's UserID as the subject.
func (h *Host) identityOf(ctx context.Context, req mcp.Request, transport string) *auth.Identity {
	if transport == DownstreamStdio {
		return h.stdioIdentity()
	}
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if id, ok := extra.TokenInfo.Extra["mcphost.identity"].(*auth.Identity); ok {
			return id
		}
		if extra.TokenInfo.UserID != "" {
			return &auth.Identity{Subject: extra.TokenInfo.UserID}
		}
	}
	return auth.FromContext(ctx)
}

// identity is the caller of a downstream session, nil for none
// (upstreamEvents).
func (h *Host) Identity(ss *mcp.ServerSession) *auth.Identity {
	if d, _ := h.sessions.lookup(ss); d != nil {
		return d.identity
	}
	return nil
}

// latestIdentity is the identity of ss's latest request (upstreamEvents):
// the same caller as identity, with their latest access token.
func (h *Host) LatestIdentity(ss *mcp.ServerSession) *auth.Identity {
	if d, _ := h.sessions.lookup(ss); d != nil {
		if id := d.latest.Load(); id != nil {
			return id
		}
		return d.identity
	}
	return nil
}

// sessionLive reports whether ss is tracked (upstreamEvents).
func (h *Host) SessionLive(ss *mcp.ServerSession) bool {
	d, _ := h.sessions.lookup(ss)
	return d != nil
}

// sessionOwners maps HTTP session ids to the identity key that opened them.
// An entry goes when its session ends; one whose session never got going
// (an initialize the go-sdk answered without the host seeing it) is pruned
// once the map grows past a bound.
type sessionOwners struct {
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

func (o *sessionOwners) set(sid, owner string, live func() map[string]bool) {
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

func (o *sessionOwners) get(sid string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, ok := o.m[sid]
	return owner.key, ok
}

func (o *sessionOwners) forget(sid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, sid)
}

// bindSessions records who opens each HTTP session and refuses, with 404,
// a request for a session that another identity opened. It runs after the
// authenticator, so every request has an identity.
func (h *Host) bindSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := auth.FromContext(r.Context())
		var sid string
		switch r.URL.Path {
		case "/mcp":
			if v := r.Header.Get("Mcp-Session-Id"); v != "" {
				sid = "mcp:" + v
			} else if r.Method == http.MethodPost {
				w = &ownerRecorder{ResponseWriter: w, record: func(v string) { h.owners.set("mcp:"+v, id.Key(), h.sessions.ids) }, fromHeader: "Mcp-Session-Id"}
			}
		case "/sse":
			switch r.Method {
			case http.MethodPost:
				if v := r.URL.Query().Get("sessionid"); v != "" {
					sid = "sse:" + v
				}
			case http.MethodGet:
				var opened string
				w = &ownerRecorder{ResponseWriter: w, record: func(v string) { opened = "sse:" + v; h.owners.set(opened, id.Key(), h.sessions.ids) }}
				defer func() {
					if opened != "" {
						h.owners.forget(opened)
					}
				}()
			}
		}
		if sid != "" {
			if owner, ok := h.owners.get(sid); ok && owner != id.Key() {
				h.log.Warn("refused a request for another identity's session", "caller", id.String(), "path", r.URL.Path, "remote", r.RemoteAddr)
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			if r.Method == http.MethodDelete {
				defer h.owners.forget(sid)
			}
		}
		next.ServeHTTP(w, r)
	})
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
