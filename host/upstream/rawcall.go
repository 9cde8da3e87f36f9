package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// Raw tool calls: on stdio and SSE upstreams, whose connections mcphost
// wraps (tapConn), a tools/call whose result no policy reads is written on
// the connection directly and its result handed downstream as the bytes
// the server sent.
//
// Why: through the go-sdk's client, each result was decoded into typed
// content (two decoders of 32 KiB each) only for the go-sdk's server to
// encode it again, and that garbage was most of what the collector chased
// on a gateway without plugins (docs/BENCHMARKS.md). Everything else about
// the call stays as it was: the session, its reconnection and routing
// (forward), progress and logs read off the same connection, sampling and
// elicitation handled by the go-sdk client, cancellation sent as
// notifications/cancelled. The go-sdk's client numbers its requests with
// integers; raw calls use string ids ("mcphost-N"), so replies cannot be
// confused.

// rawCalls are a connection's raw calls in flight.
type rawCalls struct {
	Next    atomic.Uint64
	mu      sync.Mutex
	pending map[string]chan *jsonrpc.Response
	err     error // the connection is gone
}

func (r *rawCalls) Init() { r.pending = map[string]chan *jsonrpc.Response{} }

const rawIDPrefix = "mcphost-"

// add registers a call and returns its id and the channel of its reply.
func (r *rawCalls) add() (string, chan *jsonrpc.Response, error) {
	id := rawIDPrefix + strconv.FormatUint(r.Next.Add(1), 10)
	ch := make(chan *jsonrpc.Response, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", nil, r.err
	}
	r.pending[id] = ch
	return id, ch, nil
}

func (r *rawCalls) remove(id string) {
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
}

// deliver hands a response to its raw call and reports whether it was one.
func (r *rawCalls) deliver(resp *jsonrpc.Response) bool {
	id, ok := resp.ID.Raw().(string)
	if !ok || len(id) <= len(rawIDPrefix) || id[:len(rawIDPrefix)] != rawIDPrefix {
		return false
	}
	r.mu.Lock()
	ch := r.pending[id]
	delete(r.pending, id)
	r.mu.Unlock()
	if ch != nil {
		ch <- resp
	}
	return true // a late reply to a call given up on is dropped here
}

// fail ends every call in flight: the connection is gone.
func (r *rawCalls) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.err = fmt.Errorf("%w: %v", mcp.ErrConnectionClosed, err)
	for id, ch := range r.pending {
		ch <- &jsonrpc.Response{Error: r.err}
		delete(r.pending, id)
	}
}

// RawConn returns the wrapped connection of cs, or nil.
func (u *Server) RawConn(cs *mcp.ClientSession) *TapConn {
	if c, ok := u.rawConns.Load(cs); ok {
		return c.(*TapConn)
	}
	return nil
}

// alive reports whether the connection has not failed or closed.
func (c *TapConn) alive() bool {
	c.Raw.mu.Lock()
	defer c.Raw.mu.Unlock()
	return c.Raw.err == nil
}

// drain waits up to max for the raw calls in flight to finish. The go-sdk's
// Close waits for its own calls; raw calls are invisible to it, and closing
// under them (a reload replacing the server) would fail calls the typed path
// let finish.
func (c *TapConn) drain(max time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), max)
	defer cancel()
	wire.WaitUntil(ctx, func() bool {
		c.Raw.mu.Lock()
		defer c.Raw.mu.Unlock()
		return len(c.Raw.pending) == 0 || c.Raw.err != nil
	})
}

// drainRaw lets the raw calls in flight on cs finish, within the server's
// call timeout, before the session is closed; after the host's drain,
// which already gave them listen.drain_timeout, it does not wait.
func (u *Server) drainRaw(cs *mcp.ClientSession) {
	if c := u.RawConn(cs); c != nil && !u.events.Drained() {
		c.drain(u.Config.Timeout)
	}
}

// CheckArguments refuses tool arguments that are not valid UTF-8. JSON
// text must be UTF-8 (RFC 8259 §8.1); the go-sdk passes the bytes through
// untouched, and upstreams read them differently (some replace, some fail,
// some never answer), so the gateway refuses them before any policy or
// upstream sees them.
func CheckArguments(args json.RawMessage) error {
	if utf8.Valid(args) {
		return nil
	}
	at := 0
	for at < len(args) {
		r, n := utf8.DecodeRune(args[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return fmt.Errorf("%w: the arguments are not valid UTF-8 (first bad byte at offset %d); send JSON text in UTF-8", ErrInvalidArguments, at)
}

// RawCallParams are tools/call params as the go-sdk's client sends them.
type RawCallParams struct {
	Meta      mcp.Meta        `json:"_meta,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// CallTool makes a tools/call on the connection and returns the result as
// sent. Errors are the context's, the server's JSON-RPC error (wrapped as
// the go-sdk wraps it), or mcp.ErrConnectionClosed when the connection
// fails or goes during the call; the go-sdk's client reports the latter as
// the read error (EOF), and forward would not drop the session until the
// watcher noticed.
func (c *TapConn) CallTool(ctx context.Context, p *RawCallParams) (json.RawMessage, error) {
	if len(p.Arguments) == 0 {
		p.Arguments = json.RawMessage("{}") // as the go-sdk sends no arguments
	}
	params, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding tools/call params: %w", err)
	}
	id, reply, err := c.Raw.add()
	if err != nil {
		return nil, NotSent{Err: err}
	}
	if err := c.writeCall(ctx, id, params); err != nil {
		c.Raw.remove(id)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = fmt.Errorf("%w: calling \"tools/call\": %v", mcp.ErrConnectionClosed, err)
		if c.pipes != nil {
			// A write to a stdio server's stdin that failed: its process
			// is gone, and nothing it could run was received. (An SSE
			// write is an HTTP POST, which can fail after the server took
			// the request: a proxy's 502, a reset after the body.)
			err = NotSent{Err: err}
		}
		return nil, err
	}
	select {
	case resp := <-reply:
		if resp.Error != nil {
			if errors.Is(resp.Error, mcp.ErrConnectionClosed) {
				return nil, resp.Error
			}
			return nil, fmt.Errorf("calling \"tools/call\": %w", resp.Error)
		}
		if r := bytes.TrimSpace(resp.Result); len(r) == 0 || bytes.Equal(r, []byte("null")) {
			return nil, errors.New("calling \"tools/call\": the reply has neither a result nor an error")
		}
		return resp.Result, nil
	case <-ctx.Done():
		c.Raw.remove(id)
		// Tell the server, as the go-sdk does for its own calls; off the
		// caller's path, so a stuck server cannot hold it.
		go c.cancelled(id, context.Cause(ctx))
		return nil, ctx.Err()
	}
}

// writeCall writes a raw tools/call: on a stdio server's pipes directly,
// otherwise through the go-sdk's connection.
func (c *TapConn) writeCall(ctx context.Context, id string, params json.RawMessage) error {
	if c.pipes == nil {
		jid, _ := jsonrpc.MakeID(id)
		return c.Connection.Write(ctx, &jsonrpc.Request{ID: jid, Method: "tools/call", Params: params})
	}
	if err := ctx.Err(); err != nil {
		return err // as the go-sdk's writer refuses
	}
	return c.pipes.writeRawCall(id, params)
}

func (c *TapConn) cancelled(id string, cause error) {
	p, err := json.Marshal(map[string]string{"requestId": id, "reason": cause.Error()})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Connection.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: p})
}

// CheckToolResult accepts a result only where it is sure the go-sdk's
// client decodes it as a CallToolResult: an object whose members have the
// types of the go-sdk's wire format (base64 data included), whose content
// blocks are of types it knows, and that carries none of the members of
// later protocols (resultType, inputRequests, requestState). Member names
// are matched exactly, as the go-sdk matches them. Whatever it refuses goes
// to the go-sdk's own decoder instead (FuzzCheckToolResult holds the two
// together).
func CheckToolResult(raw json.RawMessage) error {
	var r struct {
		Meta              map[string]any  `json:"_meta"`
		Content           []*wireContent  `json:"content"`
		StructuredContent any             `json:"structuredContent"`
		IsError           bool            `json:"isError"`
		ResultType        json.RawMessage `json:"resultType"`
		InputRequests     json.RawMessage `json:"inputRequests"`
		RequestState      json.RawMessage `json:"requestState"`
	}
	if len(raw) == 0 || raw[0] != '{' {
		return errors.New("result is not a JSON object")
	}
	rest, err := segjson.Parse(raw, &r, segjson.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return fmt.Errorf("decoding result: %w", err)
	}
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 { // JSON whitespace only
		return errors.New("data after the result")
	}
	if r.ResultType != nil || r.InputRequests != nil || r.RequestState != nil {
		return errors.New("result has members of a later protocol")
	}
	return checkContent(r.Content, contentTypes)
}

// contentTypes are the blocks a CallToolResult may hold, as the go-sdk
// decodes them; nestedTypes those inside a tool_result block.
var (
	contentTypes = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true,
		"resource": true, "tool_use": true, "tool_result": true}
	nestedTypes = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true, "resource": true}
)

func checkContent(blocks []*wireContent, allow map[string]bool) error {
	for i, c := range blocks {
		if c == nil || !allow[c.Type] {
			return fmt.Errorf("result content %d is not a known block", i)
		}
		if err := checkContent(c.NestedContent, nestedTypes); err != nil {
			return err
		}
	}
	return nil
}

// wireContent has the members of a content block with the Go types the
// go-sdk decodes them into (its own wireContent), so that a value of the
// wrong JSON type fails here as it would there.
type wireContent struct {
	Type              string                `json:"type"`
	Text              string                `json:"text"`
	MIMEType          string                `json:"mimeType"`
	Data              []byte                `json:"data"`
	Resource          *mcp.ResourceContents `json:"resource"`
	URI               string                `json:"uri"`
	Name              string                `json:"name"`
	Title             string                `json:"title"`
	Description       string                `json:"description"`
	Size              *int64                `json:"size"`
	Meta              map[string]any        `json:"_meta"`
	Annotations       *mcp.Annotations      `json:"annotations"`
	Icons             []mcp.Icon            `json:"icons"`
	ID                string                `json:"id"`
	Input             map[string]any        `json:"input"`
	ToolUseID         string                `json:"toolUseId"`
	NestedContent     []*wireContent        `json:"content"`
	StructuredContent any                   `json:"structuredContent"`
	IsError           bool                  `json:"isError"`
}

// PoliciesSeeAll reports whether a result (checked by checkToolResult)
// holds nothing that its ABI form leaves out, so that a policy that saw the
// ABI form and left it unchanged has seen every byte that goes downstream:
// top-level members and those of each block are among the ABI's, spelt
// exactly, and the blocks are of the five kinds the ABI carries (no nested
// content). Anything else takes the typed path, where what goes out is
// re-encoded from what the policy returned.
func PoliciesSeeAll(raw json.RawMessage) bool {
	var top map[string]json.RawMessage
	if _, err := segjson.Parse(raw, &top, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return false
	}
	// A member given twice reaches policies once (the last), but both go
	// out in the bytes: a client or log that reads the first would see
	// text no policy saw.
	if !uniqueMembers(raw, len(top)) {
		return false
	}
	for k := range top {
		if !abiResultMembers[k] {
			return false
		}
	}
	var each []json.RawMessage
	if c, ok := top["content"]; ok {
		if _, err := segjson.Parse(c, &each, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
			return false
		}
	}
	for _, e := range each {
		var b map[string]json.RawMessage
		if _, err := segjson.Parse(e, &b, segjson.DontMatchCaseInsensitiveStructFields); err != nil || !uniqueMembers(e, len(b)) {
			return false
		}
		var typ string
		if json.Unmarshal(b["type"], &typ) != nil || !nestedTypes[typ] {
			return false
		}
		for k := range b {
			if !abiContentMembers[k] {
				return false
			}
		}
	}
	return true
}

// uniqueMembers reports whether the JSON object raw has n members, that
// is, as many as the distinct names a map decoded from it holds. raw is
// valid JSON (PoliciesSeeAll parsed it), so each member has exactly one
// colon at the object's own depth outside strings: counting those is
// enough, and costs no allocation (a json.Decoder walking the tokens was
// a tenth of the five built-ins' cost on a call).
func uniqueMembers(raw json.RawMessage, n int) bool {
	depth, count := 0, 0
	inString, escaped := false, false
	for _, b := range raw {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ':':
			if depth == 1 {
				count++
			}
		}
	}
	return count == n
}

// The JSON members of abi.CallToolResult and abi.Content.
var (
	abiResultMembers  = map[string]bool{"content": true, "structuredContent": true, "isError": true, "_meta": true}
	abiContentMembers = map[string]bool{"type": true, "text": true, "data": true, "mimeType": true, "resource": true,
		"uri": true, "name": true, "title": true, "description": true, "size": true, "annotations": true, "_meta": true}
)

// PlainUpstream reports whether cs speaks a protocol whose tools/call needs
// nothing the go-sdk's client adds per request (later protocols carry the
// protocol version and capabilities in each request's _meta, and may answer
// input_required).
func PlainUpstream(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && wire.PlainVersions[ir.ProtocolVersion]
}

// NotSent marks a raw call's failure before its request was written.
type NotSent struct{ Err error }

func (e NotSent) Error() string { return e.Err.Error() }
func (e NotSent) Unwrap() error { return e.Err }

// ErrInvalidArguments is returned (wrapped) for a call whose arguments the
// gateway refuses to forward (bytes that are not UTF-8).
var ErrInvalidArguments = errors.New("invalid arguments")
