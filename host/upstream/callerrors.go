package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How a call to an upstream failed, read off its error: the gateway
// retries what was never sent and gives up a session whose transport
// failed.

// NeverSent reports whether err says that a request failed before it was
// written to its connection: a raw call's (NotSent), or the go-sdk's
// refusal of a call on a connection that is shutting down (its jsonrpc2
// ErrClientClosing, which it reports only for calls it did not send, and
// passes on only as text).
func NeverSent(err error) bool {
	if err == nil {
		return false
	}
	var ns NotSent
	return errors.As(err, &ns) || errors.Is(err, mcp.ErrConnectionClosed) && strings.Contains(err.Error(), ": client is closing")
}

// TransportFailed reports whether err says the connection to an upstream
// is gone, rather than that the server answered with an error or the call
// ran out of time: a closed connection (ClosedUnder), or, over HTTP, a
// request that got no HTTP answer at all (refused, reset, cut: the go-sdk
// wraps the HTTP client's *url.Error). An HTTP error status (502, 503,
// 429) is not: the go-sdk calls those transient, and one must not cost a
// shared session.
func TransportFailed(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var op *net.OpError
	var ue *url.Error
	return ClosedUnder(err) || errors.As(err, &op) || errors.As(err, &ue) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// ClosedUnder reports whether err says the connection closed under a
// request: the go-sdk's ErrConnectionClosed, or the end of a stdio
// server's output when it died mid-call, which the go-sdk passes on as a
// bare EOF.
func ClosedUnder(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
