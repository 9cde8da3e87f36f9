package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

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
	if neverSent(err) && ctx.Err() == nil {
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
	if transportFailed(err) {
		u.Lost(cs, err) // do not hand the dead session to the next call
	}
	return err
}

// neverSent reports whether err says that a request failed before it was
// written to its connection: a raw call's (notSent), or the go-sdk's
// refusal of a call on a connection that is shutting down (its jsonrpc2
// ErrClientClosing, which it reports only for calls it did not send, and
// passes on only as text).
func neverSent(err error) bool {
	if err == nil {
		return false
	}
	var ns upstream.NotSent
	return errors.As(err, &ns) || errors.Is(err, mcp.ErrConnectionClosed) && strings.Contains(err.Error(), ": client is closing")
}

// transportFailed reports whether err says the connection to an upstream
// is gone, rather than that the server answered with an error or the call
// ran out of time: a closed connection (closedUnder), or, over HTTP, a
// request that got no HTTP answer at all (refused, reset, cut: the go-sdk
// wraps the HTTP client's *url.Error). An HTTP error status (502, 503,
// 429) is not: the go-sdk calls those transient, and one must not cost a
// shared session.
func transportFailed(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var op *net.OpError
	var ue *url.Error
	return closedUnder(err) || errors.As(err, &op) || errors.As(err, &ue) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// closedUnder reports whether err says the connection closed under a
// request: the go-sdk's ErrConnectionClosed, or the end of a stdio
// server's output when it died mid-call, which the go-sdk passes on as a
// bare EOF.
func closedUnder(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
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
