package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/paramheader"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/sessionless"
	"github.com/mcphost-project/mcphost/internal/version"
)

// Protocol 2026-07-28 on /mcp (package sessionless has the why): requests
// without a session go to the go-sdk's stateless handler, behind
// sessionlessShortcut, which answers the plain tools/call and tools/list
// requests itself, as fastCall and fastList do for sessions: the go-sdk's
// stateless handler makes a server session per request, which cost more
// than the call (docs/BENCHMARKS.md).

// serverImpl is what mcphost's downstream servers say they are.
var serverImpl = &mcp.Implementation{Name: "mcphost", Title: "mcphost gateway", Version: version.Version}

// streamableHandlers returns the go-sdk's streamable HTTP handlers of srv:
// the stateful one, whose idle sessions end after sessionTimeout, and the
// stateless one for protocol 2026-07-28 (/mcp puts the shortcut in front
// of it; a toolset's endpoint does not, as the shortcut answers from /mcp's
// view). Both limit
// request bodies to maxBody. A stateless request's handler ends when its
// HTTP request does (the client went away: nothing can receive the
// answer), which cancels its upstream call.
func (h *Host) streamableHandlers(srv *mcp.Server, sessionTimeout time.Duration, maxBody int64) (stateful, stateless http.Handler) {
	get := h.serverFor(srv)
	stateful = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		SessionTimeout:      sessionTimeout,
		MaxRequestBodyBytes: maxBody,
	})
	stateless = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          maxBody,
		PropagateRequestCancellation: true,
	})
	return stateful, stateless
}

// sessionlessShortcut answers the requests sessionless.Read takes and hands
// every other request to next, the go-sdk's stateless handler. With traces
// on it stands aside (the request span is made in the go-sdk path's
// middleware).
func (h *Host) sessionlessShortcut(next http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.noShortcuts || h.tracer != nil || r.Method != http.MethodPost || r.Body == nil || r.Header.Get("Mcp-Protocol-Version") != sessionless.Version {
			next.ServeHTTP(w, r)
			return
		}
		body, whole := readShortBody(r, maxBody)
		if whole {
			if req, ok := h.sessionlessReader.Read(r, body); ok && h.answerSessionless(w, r, req) {
				return
			}
		}
		restoreBody(r, body, whole)
		next.ServeHTTP(w, r)
	})
}

// answerSessionless answers req as the go-sdk's path would, with the caller
// it would describe, and reports whether it did (it leaves the request to
// the go-sdk when it cannot answer it the same way).
func (h *Host) answerSessionless(w http.ResponseWriter, r *http.Request, req *sessionless.Request) bool {
	ctx := paramheader.WithIncoming(r.Context(), r.Header) // checked by resolve
	// The request as the go-sdk would hand it to the middleware, for what
	// is read from it: the identity and the balancer's replica name.
	sreq := &mcp.ServerRequest[*mcp.CallToolParamsRaw]{Extra: &mcp.RequestExtra{TokenInfo: sdkauth.TokenInfoFromContext(ctx), Header: r.Header}}
	id := h.identityOf(ctx, sreq, DownstreamHTTP)
	caller := abi.Caller{Transport: DownstreamHTTP}
	id.Fill(&caller)
	if req.Client != nil {
		caller.ClientName, caller.ClientVersion = req.Client.Name, req.Client.Version
	}
	caller.Meta = sessionless.CallerMeta(req.Meta)
	if req.Method == "tools/list" {
		v, err := h.view(ctx, caller)
		var listing []byte
		if err == nil {
			listing, err = v.encodedNew(h.wants(abi.HookToolsList))
		}
		if err != nil {
			return false // the go-sdk path reports the error as a JSON-RPC error
		}
		sessionless.WriteCompact(w, req.ID, listing)
		return true
	}
	// Per-client upstream sessions are kept by downstream session, which
	// only the go-sdk's path has.
	if !h.sharedSessionsOnly() {
		return false
	}
	p := &mcp.CallToolParamsRaw{Meta: req.Meta, Name: req.Name, Arguments: req.Args}
	what := sessionless.RoundKey("tools/call", p.Name)
	res, err := h.inRounds(ctx, nil, caller, id.Key(), what, p.Arguments, sessionless.ReplicaRoute(sreq), "", nil,
		func(ctx context.Context) (mcp.Result, error) {
			return h.fastCallResult(context.WithValue(ctx, rawResultsKey{}, true), caller, p, nil)
		})
	if err != nil {
		sessionless.Write(w, req.ID, nil, callError(err))
		return true
	}
	out, err := sessionlessResult(res)
	if err != nil {
		sessionless.Write(w, req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()})
		return true
	}
	sessionless.Write(w, req.ID, out, nil)
	return true
}

// rawResultsKey marks the context of a call whose client takes results as
// the upstream's bytes though it has no go-sdk session (rawResults): the
// shortcut's.
type rawResultsKey struct{}

// sessionlessResult encodes res as the go-sdk encodes a result of protocol
// 2026-07-28 (sessionless.EncodeResult).
func sessionlessResult(res mcp.Result) (json.RawMessage, error) {
	raw, _ := wire.AsSent(res)
	return sessionless.EncodeResult(res, raw, serverImpl)
}

// sharedSessionsOnly reports whether every upstream keeps one shared
// session (no per_client or per_session sessions, no per-caller logins).
func (h *Host) sharedSessionsOnly() bool {
	for _, u := range h.upstreamList() {
		if u.PerClient() || u.PerUser() {
			return false
		}
	}
	return true
}

// encodedNew returns the view's tools/list result as the go-sdk encodes it
// for protocol 2026-07-28, computed once per view. private is whether the
// view depends on the caller (catalog.ListAnswer).
func (v *view) encodedNew(private bool) ([]byte, error) {
	v.newOnce.Do(func() { v.newEnc, v.newErr = sessionless.EncodeListing(v.result, private, serverImpl) })
	return v.newEnc, v.newErr
}

// sessionlessLevel gives d, the session of one sessionless request, the
// log level the request asks for in _meta (2026-07-28 has no
// logging/setLevel), and asks the upstreams for it, so that their log
// messages during the request reach its response stream, as the revision
// has them, and no other.
func (h *Host) sessionlessLevel(ctx context.Context, d *downstream, ss *mcp.ServerSession, req mcp.Request) {
	if d == nil || !d.sessionless || wire.IsNilParams(req.GetParams()) {
		return
	}
	level, _ := req.GetParams().GetMeta()[mcp.MetaKeyLogLevel].(string)
	if _, ok := wire.LogRank(mcp.LoggingLevel(level)); !ok || h.sessions.level(ss) != "" {
		return
	}
	h.setLevel(ctx, ss, mcp.LoggingLevel(level))
}
