package host

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tapTransport takes progress and log notifications off an upstream
// connection as they are read, in wire order, and forwards them at once.
//
// Why: the go-sdk hands notifications to a handler goroutine but retires a
// call's response straight from the read loop, so a progress notification
// a server sent just before its result could reach its handler after the
// call had returned and its route was gone (seen with SSE upstreams).
// Forwarding from Read keeps the order the server sent.
//
// Only stdio and SSE connections are tapped: the streamable HTTP client
// connection implements an unexported interface that a wrapper would hide.
type tapTransport struct {
	mcp.Transport
	u     *upstream
	bound *atomic.Pointer[mcp.ClientSession] // set once Connect returns; logs need it to route
	conn  *atomic.Pointer[tapConn]           // set to the connection made
}

func (t tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	tc := &tapConn{Connection: c, t: t}
	tc.raw.init()
	if p, ok := c.(rawPiper); ok && p.rawPipes() != nil {
		// A stdio server's pipes: raw calls go around the go-sdk.
		tc.pipes = p.rawPipes()
		tc.pipes.stdout.divertTo(pipeSinks{deliver: tc.raw.deliver, tap: func(method string, params json.RawMessage) bool {
			return t.u.tap(t.bound.Load(), method, params)
		}})
	}
	t.conn.Store(tc)
	return tc, nil
}

type tapConn struct {
	mcp.Connection
	t     tapTransport
	raw   rawCalls       // calls made outside the go-sdk's session (rawcall.go)
	pipes *upstreamPipes // a stdio server's, which raw calls use directly; nil otherwise
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.gone(err)
			return msg, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if !m.IsCall() && c.t.u.tap(c.t.bound.Load(), m.Method, m.Params) {
				continue
			}
		case *jsonrpc.Response:
			if c.raw.deliver(m) {
				continue
			}
		}
		return msg, nil
	}
}

func (c *tapConn) Close() error {
	c.gone(mcp.ErrConnectionClosed)
	return c.Connection.Close()
}

// gone fails the raw calls in flight and forgets the connection.
func (c *tapConn) gone(err error) {
	c.raw.fail(err)
	if cs := c.t.bound.Load(); cs != nil {
		c.t.u.rawConns.CompareAndDelete(cs, c)
	}
}

// tap forwards a progress or log notification and reports whether it did;
// anything else (or anything it cannot decode) goes on to the go-sdk.
func (u *upstream) tap(cs *mcp.ClientSession, method string, params json.RawMessage) bool {
	switch method {
	case "notifications/progress":
		p, err := decodeProgress(params)
		if err != nil {
			return false
		}
		u.events.upstreamProgress(context.Background(), u, p)
		return true
	case "notifications/message":
		if cs == nil {
			return false
		}
		var p mcp.LoggingMessageParams
		if err := json.Unmarshal(params, &p); err != nil || p.Level == "" {
			return false
		}
		u.logUpstreamLog(&p)
		u.events.upstreamLog(u, cs, &p)
		return true
	}
	return false
}

// decodeProgress decodes notifications/progress params from a server.
func decodeProgress(params json.RawMessage) (*mcp.ProgressNotificationParams, error) {
	var p mcp.ProgressNotificationParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	if p.ProgressToken == nil {
		return nil, errNoToken
	}
	return &p, nil
}

var errNoToken = errors.New("progress notification without a token")
