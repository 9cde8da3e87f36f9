package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/sessionless"
	"github.com/mcphost-project/mcphost/host/telemetry"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// Forwarding a request to an upstream, for tools/call and every other
// method alike: the session that serves the caller, the call timeout, the
// caller's _meta with progress routed back, and what a failure means for
// the connection.

// forward runs fn, which sends method to u, against the session that
// serves ss on u (shared, or ss's own with sessions = "per_client"), under
// the server's call timeout, and records the call so that what the server
// sends during it finds ss. When tracing, the call is a client span, whose
// context goes to the server in meta (the request's _meta, which fn
// sends; nil for a request without one). If the drain gives up on the
// requests in flight (Drain), fn's context ends and forward returns
// ErrShuttingDown.
func (h *Host) forward(ctx context.Context, ss *mcp.ServerSession, u *upstream.Server, method string, meta mcp.Meta, fn func(context.Context, *mcp.ClientSession) error) (err error) {
	defer func() { err = u.MaskFor(ss, err) }() // before the span records it
	if h.tracer != nil {
		var span trace.Span
		ctx, span = h.tracer.Start(ctx, method+" "+u.Config.Name, trace.SpanKindClient,
			attribute.String("mcp.method.name", method), attribute.String("mcphost.server", u.Config.Name))
		telemetry.ToMeta(ctx, meta)
		defer func() { telemetry.Error(span, err); span.End() }()
	}
	u.Acquire()
	defer u.Release()
	ctx, unbind := h.drain.bound(ctx)
	defer unbind()
	ctx, cancel := context.WithTimeout(ctx, u.Config.Timeout)
	defer cancel()
	cs, done, err := u.SessionFor(ctx, ss)
	if err != nil {
		return err
	}
	err = h.sendOn(ctx, ss, u, cs, done, fn)
	if upstream.NeverSent(err) && ctx.Err() == nil {
		// The connection was found gone before the request was written
		// (the server died since the last call): nothing reached the
		// server, so the request goes once more, on the connection that
		// replaces it.
		if cs2, done2, err2 := u.SessionFor(ctx, ss); err2 != nil {
			err = err2
		} else if cs2 == cs {
			done2()
		} else {
			u.Logger().Debug("request sent again on a new connection: the last one was gone before it was sent", "method", method, "error", err)
			err = h.sendOn(ctx, ss, u, cs2, done2, fn)
		}
	}
	if err != nil && errors.Is(context.Cause(ctx), ErrShuttingDown) {
		return ErrShuttingDown
	}
	return err
}

// sendOn is one attempt of forward: fn on cs, which done releases.
func (h *Host) sendOn(ctx context.Context, ss *mcp.ServerSession, u *upstream.Server, cs *mcp.ClientSession, done func(), fn func(context.Context, *mcp.ClientSession) error) error {
	defer done()
	if ss != nil || sessionless.RoundFrom(ctx) != nil {
		defer h.calls.enter(cs, ss, ctx)()
	}
	err := fn(ctx, cs)
	if upstream.TransportFailed(err) {
		u.Lost(cs, err) // do not hand the dead session to the next call
	}
	return err
}

// upstreamMeta copies a request's _meta for the upstream, replacing a
// progress token with one that routes progress back to ss, and leaving out
// what protocol 2026-07-28 puts in every request (sessionless.PerRequestMeta): it
// describes the downstream request, and the upstream session follows a
// protocol of its own, which the go-sdk client would otherwise take from
// it. (forward adds the trace context.)
func (h *Host) upstreamMeta(ctx context.Context, u *upstream.Server, ss *mcp.ServerSession, meta mcp.Meta) (mcp.Meta, func()) {
	out := make(mcp.Meta, len(meta))
	for k, v := range meta {
		if !sessionless.PerRequestMeta(k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		if h.tracer != nil {
			return out, func() {} // for forward's traceparent
		}
		return nil, func() {}
	}
	token, ok := meta["progressToken"]
	if !ok {
		return out, func() {}
	}
	if ss == nil || token == nil {
		delete(out, "progressToken")
		return out, func() {}
	}
	up, done := h.progressRoutes.register(ctx, u, ss, token)
	out["progressToken"] = up
	return out, done
}

// rpcError turns a routing or upstream failure into the JSON-RPC error the
// client sees; an upstream's own JSON-RPC error passes through as it is.
func rpcError(server string, err error) error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("server %q: %s", server, wire.ErrorText(err))}
}
