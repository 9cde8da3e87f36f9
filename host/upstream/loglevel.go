package upstream

import (
	"context"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// levelInMeta is a sending middleware that gives each request to a server
// at 2026-07-28 or later the log level of its session in _meta
// (io.modelcontextprotocol/logLevel): those servers log during a request
// only at the level the request names, and no longer keep the level
// logging/setLevel set. The level is the one mcphost set on the session:
// for the shared session the most verbose any client asked for, for a
// per-client session its client's (recorded here as it is sent). A level
// the request already names is kept.
func (u *Server) levelInMeta(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		cs, _ := req.GetSession().(*mcp.ClientSession)
		if cs == nil {
			return next(ctx, method, req)
		}
		if method == "logging/setLevel" {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				u.mu.Lock()
				if c := u.owners[cs]; c != nil {
					c.logLevel = p.Level
				}
				u.mu.Unlock()
			}
			return next(ctx, method, req)
		}
		ir := cs.InitializeResult()
		if ir == nil || ir.ProtocolVersion < wire.NewProtocolVersion {
			return next(ctx, method, req)
		}
		level := u.sessionLevel(cs)
		params := req.GetParams()
		if level == "" || params == nil {
			return next(ctx, method, req)
		}
		if _, set := params.GetMeta()[mcp.MetaKeyLogLevel]; !set {
			m := maps.Clone(params.GetMeta())
			if m == nil {
				m = map[string]any{}
			}
			m[mcp.MetaKeyLogLevel] = level
			params.SetMeta(m)
		}
		return next(ctx, method, req)
	}
}

// sessionLevel is the log level mcphost set on cs: its client's for a
// per-client session, else the shared session's.
func (u *Server) sessionLevel(cs *mcp.ClientSession) mcp.LoggingLevel {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.owners[cs]; c != nil {
		return c.logLevel
	}
	return u.logLevel
}
