package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// InternalTools is an in-process server's fast path for tools/call
// (ServerConfig.InternalTools): the call is handed to it as raw JSON and
// its answer, a CallToolResult as JSON, goes back to the upstream's
// session as the server's response, without the go-sdk's server session
// decoding the request and encoding the result. Everything else (the
// listing, list_changed, logging/setLevel, pings) goes through the
// in-process mcp.Server as before.
type InternalTools interface {
	CallToolRaw(ctx context.Context, call *InternalCall) (json.RawMessage, error)
}

// InternalCall is one tools/call on the fast path.
type InternalCall struct {
	Name      string
	Arguments json.RawMessage
	Meta      mcp.Meta
	// Progress and Log send notifications to the calling upstream
	// session, as the server session's NotifyProgress and Log would; Log
	// drops what the session's log level (logging/setLevel) drops and
	// reports whether it sent.
	Progress func(ctx context.Context, p *mcp.ProgressNotificationParams) error
	Log      func(ctx context.Context, p *mcp.LoggingMessageParams) (bool, error)
}

// memPipe connects an upstream to an in-process server (TransportInternal):
// two mcp.Connections over channels, each message encoded and decoded on
// the way, so each side holds its own copy as over a wire. fast, when not
// nil, takes tools/call requests written by the client side.
//
// Why not mcp.NewInMemoryTransports: it runs the stdio framing over a
// net.Pipe, whose synchronous writes and the decoder's reads cost several
// goroutine hand-offs and a large buffer per message. And the go-sdk's
// server session costs more than the rest of a tool plugin's call
// (docs/BENCHMARKS.md), hence the fast path.
func memPipe(fast InternalTools) (client, server mcp.Transport) {
	done := make(chan struct{})
	toServer, toClient := make(chan jsonrpc.Message, 64), make(chan jsonrpc.Message, 64)
	var once sync.Once
	closeFn := func() { once.Do(func() { close(done) }) }
	c := &memConn{in: toClient, out: toServer, done: done, close: closeFn, fast: fast}
	if fast != nil {
		c.calls = map[string]context.CancelFunc{}
	}
	return memTransport{c}, memTransport{&memConn{in: toServer, out: toClient, done: done, close: closeFn}}
}

type memTransport struct{ c *memConn }

func (t memTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

type memConn struct {
	in, out chan jsonrpc.Message
	done    chan struct{}
	close   func()

	// The client side's fast path: calls in flight by request id (for
	// notifications/cancelled), and the log level the client set.
	fast     InternalTools
	mu       sync.Mutex
	calls    map[string]context.CancelFunc
	logLevel mcp.LoggingLevel
}

var errMemClosed = errors.New("in-process connection closed")

func (c *memConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		select { // what was sent before the close
		case m := <-c.in:
			return m, nil
		default:
		}
		return nil, errMemClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// copyMessage encodes and decodes msg: the other side gets its own.
func copyMessage(msg jsonrpc.Message) (jsonrpc.Message, error) {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, err
	}
	return jsonrpc.DecodeMessage(b)
}

func (c *memConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if c.fast != nil {
		if req, ok := msg.(*jsonrpc.Request); ok {
			switch {
			case req.Method == "tools/call" && req.IsCall():
				return c.callFast(req)
			case req.Method == "notifications/cancelled":
				c.cancelFast(req.Params)
			case req.Method == "logging/setLevel":
				var p struct {
					Level mcp.LoggingLevel `json:"level"`
				}
				if json.Unmarshal(req.Params, &p) == nil {
					c.mu.Lock()
					c.logLevel = p.Level
					c.mu.Unlock()
				}
			}
		}
	}
	m, err := copyMessage(msg)
	if err != nil {
		return err
	}
	return c.send(ctx, c.out, m)
}

func (c *memConn) send(ctx context.Context, ch chan jsonrpc.Message, m jsonrpc.Message) error {
	select {
	case <-c.done:
		return errMemClosed
	default:
	}
	select {
	case ch <- m:
		return nil
	case <-c.done:
		return errMemClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *memConn) Close() error {
	c.close()
	return nil
}

func (c *memConn) SessionID() string { return "" }

// callFast runs a tools/call on the fast path and answers it on the
// client's side of the pipe, as the server would.
func (c *memConn) callFast(req *jsonrpc.Request) error {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      mcp.Meta        `json:"_meta"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return c.answer(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()})
	}
	key := wire.IDKey(req.ID)
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.calls[key] = cancel
	c.mu.Unlock()
	call := &InternalCall{Name: p.Name, Arguments: p.Arguments, Meta: p.Meta,
		Progress: func(ctx context.Context, pp *mcp.ProgressNotificationParams) error {
			return c.notify(ctx, "notifications/progress", pp)
		},
		Log: func(ctx context.Context, lp *mcp.LoggingMessageParams) (bool, error) {
			c.mu.Lock()
			level := c.logLevel
			c.mu.Unlock()
			if level == "" || logBelow(lp.Level, level) {
				return false, nil // as the go-sdk's ServerSession.Log
			}
			return true, c.notify(ctx, "notifications/message", lp)
		},
	}
	go func() {
		defer func() {
			c.mu.Lock()
			delete(c.calls, key)
			c.mu.Unlock()
			cancel()
		}()
		res, err := c.fast.CallToolRaw(ctx, call)
		if ctx.Err() != nil {
			return // cancelled: the client expects no answer
		}
		var werr *jsonrpc.Error
		if err != nil && !errors.As(err, &werr) {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		_ = c.answer(req.ID, res, werr)
	}()
	return nil
}

// answer puts the response to id on the client's side.
func (c *memConn) answer(id jsonrpc.ID, result json.RawMessage, werr *jsonrpc.Error) error {
	resp := &jsonrpc.Response{ID: id, Result: result}
	if werr != nil {
		resp = &jsonrpc.Response{ID: id, Error: werr}
	}
	return c.send(context.Background(), c.in, resp)
}

// notify puts a notification from the server on the client's side.
func (c *memConn) notify(ctx context.Context, method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.send(ctx, c.in, &jsonrpc.Request{Method: method, Params: b})
}

func (c *memConn) cancelFast(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	cancel := c.calls[wire.IDKey(id)]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// logBelow reports whether msg is less severe than level, as the go-sdk's
// ServerSession.Log compares them (a level MCP does not define ranks first).
func logBelow(msg, level mcp.LoggingLevel) bool {
	m, _ := wire.LogRank(msg)
	l, _ := wire.LogRank(level)
	return m < l
}

// Direct reports whether tools/call on c can skip the JSON-RPC exchange:
// c wraps the client side of a memPipe with a fast path.
func (c *TapConn) Direct() bool {
	m, ok := c.Connection.(*memConn)
	return ok && m.fast != nil
}

// CallDirect runs a tools/call on the in-process server's fast path from
// the calling goroutine and returns its result as sent: no request to
// encode, no response to route. Its progress and log messages are tapped
// as they are sent, before the call returns, in the order sent, as
// tapConn.Read does for a server's messages on the wire.
func (c *TapConn) CallDirect(ctx context.Context, p *RawCallParams) (json.RawMessage, error) {
	m := c.Connection.(*memConn)
	if !c.alive() {
		return nil, mcp.ErrConnectionClosed
	}
	tap := func(method string, params any) (bool, error) {
		b, err := json.Marshal(params)
		if err != nil {
			return false, err
		}
		if !c.T.U.tap(c.T.Bound.Load(), method, b) {
			return false, fmt.Errorf("%s not delivered", method)
		}
		return true, nil
	}
	call := &InternalCall{Name: p.Name, Arguments: p.Arguments, Meta: p.Meta,
		Progress: func(_ context.Context, pp *mcp.ProgressNotificationParams) error {
			_, err := tap("notifications/progress", pp)
			return err
		},
		Log: func(_ context.Context, lp *mcp.LoggingMessageParams) (bool, error) {
			m.mu.Lock()
			level := m.logLevel
			m.mu.Unlock()
			if level == "" || logBelow(lp.Level, level) {
				return false, nil // as the go-sdk's ServerSession.Log
			}
			return tap("notifications/message", lp)
		},
	}
	if len(call.Arguments) == 0 {
		call.Arguments = json.RawMessage("{}")
	}
	res, err := m.fast.CallToolRaw(ctx, call)
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return nil, fmt.Errorf("calling %q: %w", "tools/call", werr)
		}
		return nil, err
	}
	return res, nil
}
