package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TapTransport takes progress and log notifications off an upstream
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
type TapTransport struct {
	mcp.Transport
	U     *Server
	Bound *atomic.Pointer[mcp.ClientSession] // set once Connect returns; logs need it to route
	conn  *atomic.Pointer[TapConn]           // set to the connection made
	init  *initCapture                       // takes the first answer's result (tasks.go)
}

func (t TapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	tc := &TapConn{Connection: c, T: t}
	tc.Raw.Init()
	if p, ok := c.(rawPiper); ok && p.RawPipes() != nil {
		// A stdio server's pipes: raw calls go around the go-sdk.
		tc.pipes = p.RawPipes()
		tc.pipes.stdout.divertTo(pipeSinks{deliver: tc.Raw.deliver, tap: func(method string, params json.RawMessage) bool {
			return t.U.tap(t.Bound.Load(), method, params)
		}})
	}
	t.conn.Store(tc)
	return tc, nil
}

type TapConn struct {
	mcp.Connection
	T     TapTransport
	Raw   rawCalls       // calls made outside the go-sdk's session (rawcall.go)
	pipes *upstreamPipes // a stdio server's, which raw calls use directly; nil otherwise
}

func (c *TapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.gone(err)
			return msg, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if !m.IsCall() && c.T.U.tap(c.T.Bound.Load(), m.Method, m.Params) {
				continue
			}
		case *jsonrpc.Response:
			if c.Raw.deliver(m) {
				continue
			}
			if c.T.init != nil {
				c.T.init.first(m.Result)
			}
		}
		return msg, nil
	}
}

func (c *TapConn) Close() error {
	c.gone(mcp.ErrConnectionClosed)
	return c.Connection.Close()
}

// gone fails the raw calls in flight and forgets the connection.
func (c *TapConn) gone(err error) {
	c.Raw.fail(err)
	if cs := c.T.Bound.Load(); cs != nil {
		c.T.U.rawConns.CompareAndDelete(cs, c)
	}
}

// tap forwards a progress, log or task status notification and reports
// whether it did; anything else (or anything it cannot decode) goes on to
// the go-sdk, which drops a task status notification (it knows no tasks).
func (u *Server) tap(cs *mcp.ClientSession, method string, params json.RawMessage) bool {
	switch method {
	case "notifications/progress":
		p, err := DecodeProgress(params)
		if err != nil {
			return false
		}
		u.events.Progress(context.Background(), u, p)
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
		u.events.LogMessage(u, cs, &p)
		return true
	case "notifications/tasks/status":
		if cs != nil {
			u.events.TaskStatus(u, cs, params)
		}
		return true
	}
	return false
}

// DecodeProgress decodes notifications/progress params from a server.
func DecodeProgress(params json.RawMessage) (*mcp.ProgressNotificationParams, error) {
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
