package gateway

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/listener"
)

// Identities: who a downstream client is, and which sessions it owns.
//
// The Authenticator (package auth) turns an HTTP request's bearer token
// into an identity. A session belongs to the identity that opened it: the
// same session id presented by anyone else is answered 404, as if it did
// not exist, so a stolen id reveals nothing. A session's entry in the
// session table keeps its identity, which every hook's Caller carries.

// DefaultAdminGroup is the group whose keys may read /status when
// listen.auth names no admin_groups (listener.DefaultAdminGroup).
const DefaultAdminGroup = listener.DefaultAdminGroup

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

// Identity is the caller of a downstream session, nil for none
// (upstreamEvents).
func (h *Host) Identity(ss *mcp.ServerSession) *auth.Identity {
	if d, _ := h.sessions.lookup(ss); d != nil {
		return d.identity
	}
	return nil
}

// LatestIdentity is the identity of ss's latest request (upstreamEvents):
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

// SessionLive reports whether ss is tracked (upstreamEvents).
func (h *Host) SessionLive(ss *mcp.ServerSession) bool {
	d, _ := h.sessions.lookup(ss)
	return d != nil
}
