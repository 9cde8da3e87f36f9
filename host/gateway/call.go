package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/internal/paramheader"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/quota"
	"github.com/mcphost-project/mcphost/host/tasks"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/host/usersecrets"
)

// A tools/call, one step after another (call): resolve the name in the
// caller's view, admit (tool_call hooks), forward (pickPath chooses typed,
// raw or direct; forward.go does the sending), transform (tool_result
// hooks); the result goes back typed or as the upstream's bytes
// (rawresult.go).

// CallTool calls a tool by its exposed name. A failure of the tool or its
// upstream (down, timed out, closed mid-call) or a policy denial comes back
// as a result with IsError set; the error is only for a name the caller
// cannot see (ErrUnknownTool), a policy that fails closed on listing, or a
// closed host.
func (h *Host) CallTool(ctx context.Context, caller abi.Caller, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	res, err := h.callTool(ctx, caller, name, args, nil, nil)
	if err != nil {
		return nil, err
	}
	return wire.TypedResult(res)
}

// callTool is the whole call path: resolve, admit, forward, transform
// (each may end the call with a result), told to the observer and the audit
// log. The result is a *mcp.CallToolResult, or a *wire.RawToolResult for a
// downstream session that takes results as sent (rawResults).
func (h *Host) callTool(ctx context.Context, caller abi.Caller, name string, args json.RawMessage, meta mcp.Meta, ss *mcp.ServerSession) (res mcp.Result, err error) {
	tr := h.newTrace()
	if tr != nil {
		start := time.Now()
		defer func() { h.observeCall(tr, start, caller, name, args, res, err) }()
	}
	if name == codemode.ToolName && h.exposure(ctx).Exposure == catalog.ExposureCode && !h.closed.Load() {
		return h.runCode(ctx, caller, args, ss) // codemode.go
	}
	c, ticket, res, err := h.admitted(ctx, caller, name, args, tr)
	if c == nil {
		return res, err
	}
	defer ticket.Release() // answered, failed, cancelled or timed out
	return h.transform(ctx, c, h.forwardCall(ctx, c, meta, ss, tr), tr)
}

// TaskStatus forwards a server's task status to the task's session (host/tasks).
func (h *Host) TaskStatus(u *upstream.Server, cs *mcp.ClientSession, params json.RawMessage) {
	h.tasks.UpstreamStatus(u.Config.Name, cs, params)
}

// newTrace is a trace for the observer and the audit log; nil without.
func (h *Host) newTrace() *callTrace {
	if h.observer == nil && h.audit == nil {
		return nil
	}
	return &callTrace{audit: h.audit != nil}
}

// answerToolCall is a client's tools/call as the client is answered, on
// both paths that serve one: route (the go-sdk's) and the shortcut
// (fastcall.go). A failure that is not the tool's is a JSON-RPC error.
func (h *Host) answerToolCall(ctx context.Context, caller abi.Caller, p *mcp.CallToolParamsRaw, ss *mcp.ServerSession) (mcp.Result, error) {
	res, handled, err := h.searchCall(ctx, caller, p, ss)
	if !handled {
		res, err = h.callTool(ctx, caller, p.Name, p.Arguments, p.Meta, ss)
	}
	if err != nil {
		return nil, callError(err)
	}
	return res, nil
}

// callError is the JSON-RPC error a failed tools/call is answered with,
// on both paths.
func callError(err error) *jsonrpc.Error {
	if werr, ok := err.(*jsonrpc.Error); ok {
		return werr // already one (a recovered panic)
	}
	switch {
	case errors.Is(err, ErrUnknownTool) || errors.Is(err, upstream.ErrInvalidArguments) || errors.Is(err, codemode.ErrInvalidInput):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: wire.ErrorText(err)}
}

// toolCall is one tools/call on its way through the steps: what resolve
// found, and the arguments admit let through.
type toolCall struct {
	caller      abi.Caller
	name        string // as the caller calls it: the exposed name
	route       catalog.Route
	u           *upstream.Server
	args        json.RawMessage
	annotations *abi.Annotations
}

// admitted is call up to the upstream (resolve, quota, admit): c is nil if
// it ended there (res, err); else the caller forwards c, then releases ticket.
func (h *Host) admitted(ctx context.Context, caller abi.Caller, name string, args json.RawMessage, tr *callTrace) (c *toolCall, ticket *quota.Ticket, res mcp.Result, err error) {
	c, res, err = h.resolve(ctx, caller, name, args, tr)
	if c == nil {
		return nil, nil, res, err
	}
	if l := h.quotas.Load(); l != nil { // nil without quotas: no lock, no allocation
		if ticket, res = h.takeQuota(ctx, l, c, tr); res != nil {
			return nil, nil, res, nil
		}
	}
	if res, err := h.admitCall(ctx, c, tr); res != nil || err != nil {
		ticket.Refund() // it went no further: it counts in no window
		ticket.Release()
		return nil, nil, res, err
	}
	return c, ticket, nil, nil
}

// resolve finds name in the caller's view: its server and tool. A name
// the view does not have is answered here (hidden.go).
func (h *Host) resolve(ctx context.Context, caller abi.Caller, name string, args json.RawMessage, tr *callTrace) (*toolCall, mcp.Result, error) {
	if h.closed.Load() {
		return nil, nil, upstream.ErrClosed
	}
	if err := upstream.CheckArguments(args); err != nil {
		return nil, nil, err
	}
	v, err := h.view(ctx, caller)
	if err != nil {
		return nil, nil, err
	}
	r, ok := v.routes[name]
	if !ok {
		res, err := h.hiddenCall(ctx, caller, name, args, tr)
		return nil, res, err
	}
	if hdr := paramheader.Incoming(ctx); hdr != nil { // Mcp-Param-* of an HTTP request
		if err := paramheader.Check(hdr, v.params[name], args, paramheader.Required(hdr)); err != nil {
			return nil, nil, err
		}
	}
	u := h.upstreamNamed(r.Server)
	if u == nil { // removed by a reload since the view was built
		return nil, nil, unknownTool(name)
	}
	if tr != nil {
		tr.server, tr.tool = r.Server, r.Tool
	}
	if err := tasks.Plain(ctx, name, h.cat.Load().Execution(r)); err != nil {
		return nil, nil, err // "required" by its server, which would refuse it too
	}
	return &toolCall{caller: caller, name: name, route: r, u: u, args: args, annotations: h.cat.Load().Annotations(r)}, nil, nil
}

// admitCall asks the tool_call hooks: allow, deny, rewrite the arguments (in
// c) or answer in the upstream's place. A result ends the call.
func (h *Host) admitCall(ctx context.Context, c *toolCall, tr *callTrace) (mcp.Result, error) {
	if h.wants(abi.HookToolCall) {
		in := &abi.ToolCallInput{Caller: c.caller, Name: c.name, Server: c.route.Server, Tool: c.route.Tool, Arguments: c.args, Annotations: c.annotations}
		t0 := tr.now()
		d, err := h.toolCallPolicy(ctx, in, tr)
		tr.addPolicy(t0)
		if err != nil {
			h.log.Debug("policy failed on a call", "tool", c.name, "error", err)
			tr.set(CallDenied)
			return wire.ToolError("call to %s refused: %s", c.name, wire.PolicyMessage(err)), nil
		}
		switch d.Action {
		case abi.ActionAllow, "":
		case abi.ActionDeny:
			tr.set(CallDenied)
			return h.denied(c.name, d)
		case abi.ActionRewrite:
			if err := upstream.CheckArguments(d.Arguments); err != nil {
				return wire.ToolError("call to %s refused: the policy's rewritten arguments are not valid UTF-8", c.name), nil
			}
			c.args = d.Arguments
		case abi.ActionRespond:
			tr.set(CallAnswered)
			return wire.FromABIResult(d.Result)
		default:
			return wire.ToolError("call to %s refused: policy returned unknown action %s", c.name, wire.CleanText(strconv.Quote(d.Action))), nil
		}
	}
	// A reload swaps servers and policies together (Reconfigure): a call
	// whose server went or changed while it was being admitted may have
	// been admitted by the new policies, which do not cover that server.
	if h.upstreamNamed(c.route.Server) != c.u {
		tr.set(CallInvalid)
		return wire.ToolError("call to %s refused: the config was reloaded during the call; call again", c.name), nil
	}
	return nil, nil
}

// upstreamResult is what the upstream answered: typed, or its bytes (raw,
// from the raw or the direct path). A failure is already a tool error.
type upstreamResult struct {
	typed *mcp.CallToolResult
	raw   json.RawMessage
	rpc   *jsonrpc.Error // the upstream's JSON-RPC error, when it sent one (typed is its error result)
}

// callPath is how a call reaches its upstream and its result comes back.
type callPath int

const (
	// pathTyped: the go-sdk's client, typed params and result.
	pathTyped callPath = iota
	// pathRaw: mcphost writes the request and reads the result's bytes
	// itself (upstream/rawcall.go), for a client that takes them as sent.
	pathRaw
	// pathDirect: an in-process tool server's fast path, no transport
	// (upstream/memconn.go); its bytes are decoded for a client that
	// does not take them as sent.
	pathDirect
)

// pickPath chooses a call's path: direct wherever the session's
// connection has it, raw where the downstream client takes the upstream's
// bytes (takesRaw: rawResults, shortcuts on) and the upstream session is
// one whose requests need nothing the go-sdk's client adds (plain), typed
// otherwise.
func pickPath(hasConn, direct, takesRaw, plain bool) callPath {
	switch {
	case hasConn && direct:
		return pathDirect
	case hasConn && takesRaw && plain:
		return pathRaw
	}
	return pathTyped
}

// forwardCall sends the call to its upstream (forward.go), asking the
// caller to log in first where a per_user server needs it.
func (h *Host) forwardCall(ctx context.Context, c *toolCall, meta mcp.Meta, ss *mcp.ServerSession, tr *callTrace) upstreamResult {
	u, tool, args := c.u, c.route.Tool, c.args
	if u.Config.Transport == upstream.TransportStreamableHTTP { // Mcp-Param-* of what is sent
		ctx = paramheader.WithOutgoing(ctx, paramheader.Headers(h.cat.Load().ParamHeaders(c.route), args))
	}
	upMeta, done := h.upstreamMeta(ctx, u, ss, meta)
	defer done()
	if u.Config.Transport == upstream.TransportInternal {
		// An in-process server (a tool plugin) is told who calls, under a
		// key no client can set for it: the host's value replaces theirs.
		if upMeta == nil {
			upMeta = mcp.Meta{}
		}
		upMeta[abi.CallerMetaKey] = c.caller
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args, Meta: upMeta}
	if len(args) == 0 {
		params.Arguments = nil
	}
	takesRaw := !h.noShortcuts && (wire.RawResults(ss) || ctx.Value(rawResultsKey{}) != nil)
	var out upstreamResult
	send := func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		conn := u.RawConn(cs)
		out = upstreamResult{}
		switch pickPath(conn != nil, conn != nil && conn.Direct(), takesRaw, upstream.PlainUpstream(cs)) {
		case pathDirect:
			out.raw, err = conn.CallDirect(ctx, &upstream.RawCallParams{Meta: upMeta, Name: tool, Arguments: args})
			if err == nil && !takesRaw {
				out.typed = new(mcp.CallToolResult)
				if err = json.Unmarshal(out.raw, out.typed); err != nil {
					err = fmt.Errorf("calling \"tools/call\": %w", err)
				}
				out.raw = nil
			}
		case pathRaw:
			out.raw, err = conn.CallTool(ctx, &upstream.RawCallParams{Meta: upMeta, Name: tool, Arguments: args})
		default:
			out.typed, err = cs.CallTool(ctx, params)
		}
		return err
	}
	upStart := time.Now()
	err := h.forward(ctx, ss, u, "tools/call", upMeta, send)
	if err != nil && u.PerUser() {
		// The caller must log in first (oauth mode per_user): asked over
		// the protocol, the call goes on once they have.
		var retry bool
		if retry, err = h.askToAuthorize(ctx, ss, u, err); retry {
			err = h.forward(ctx, ss, u, "tools/call", upMeta, send)
		}
	}
	if err != nil {
		// A secret the caller must give first (caller.secrets): asked as
		// for a login, the call goes on once they have.
		var retry bool
		if retry, err = h.secrets.Ask(ctx, ss, err); retry {
			err = h.forward(ctx, ss, u, "tools/call", upMeta, send)
		}
	}
	if tr != nil {
		tr.upstream = time.Since(upStart)
		if err != nil {
			tr.outcome = upstreamOutcome(err)
		}
	}
	if err != nil {
		// A failed call becomes an error result whose text comes in part
		// from the upstream (its JSON-RPC error message): it goes through
		// the result policies like any result, so redact sees it.
		out = upstreamResult{typed: upstreamErrorResult(c.route.Server, u.Config.Timeout, err)}
		errors.As(err, &out.rpc)
	}
	return out
}

// transform runs the tool_result hooks on what the upstream answered. The
// result travels as the upstream's bytes when the go-sdk would accept them
// and, past policies, the policies saw every one of them and left them
// unchanged; otherwise it is typed, encoded from what policies returned.
func (h *Host) transform(ctx context.Context, c *toolCall, up upstreamResult, tr *callTrace) (mcp.Result, error) {
	wantsResult := h.wants(abi.HookToolResult)
	asSent := up.raw != nil && upstream.CheckToolResult(up.raw) == nil && (!wantsResult || upstream.PoliciesSeeAll(up.raw))
	if up.raw != nil && !asSent {
		up.typed = new(mcp.CallToolResult)
		if err := json.Unmarshal(up.raw, up.typed); err != nil {
			up.typed = upstreamErrorResult(c.route.Server, c.u.Config.Timeout, fmt.Errorf("calling \"tools/call\": %w", err))
		}
	}
	if !wantsResult {
		if asSent {
			return &wire.RawToolResult{Raw: up.raw}, nil
		}
		return up.typed, nil
	}
	in := &abi.ToolResultInput{Caller: c.caller, Name: c.name, Server: c.route.Server, Tool: c.route.Tool, Arguments: c.args, Annotations: c.annotations}
	var err error
	if asSent {
		in.Result, err = wire.RawABIResult(up.raw)
	} else {
		in.Result, err = wire.ABIResult(up.typed)
	}
	if err != nil {
		tr.set(CallDenied)
		return wire.ToolError("result of %s could not be passed to policies: %v", c.name, err), nil
	}
	t0 := tr.now()
	out, err := h.toolResultPolicy(ctx, in, tr)
	tr.addPolicy(t0)
	if err != nil {
		h.log.Debug("policy failed on a result", "tool", c.name, "error", err)
		tr.set(CallDenied)
		return wire.ToolError("result of %s withheld by policy: %s", c.name, wire.PolicyMessage(err)), nil
	}
	if asSent && out == in.Result {
		return &wire.RawToolResult{Raw: up.raw}, nil // unchanged (Policy.ToolResult)
	}
	return wire.FromABIResult(out)
}

// upstreamErrorResult turns a failed upstream call into a tool error that
// names the server and the cause, as MCP asks for tool-level failures.
func upstreamErrorResult(server string, timeout time.Duration, err error) *mcp.CallToolResult {
	var need *upstream.AuthorizationNeeded
	var secret *usersecrets.Needed
	var xf *upstream.ExchangeFailed
	switch {
	case errors.As(err, &need):
		// Not errorText, which hides URL queries, nor cleanText, which
		// cuts long lines: the link, whole, is the point.
		return wire.ToolError("%s", need.Error())
	case errors.As(err, &secret):
		return wire.ToolError("%s", secret.Error())
	case errors.As(err, &xf):
		// mcphost's own words and the issuer's (without secrets): the
		// masking of errorText would take half of them for credentials.
		return wire.ToolError("%s", wire.CleanText(xf.Error()))
	case errors.Is(err, ErrShuttingDown):
		return wire.ToolError("server %q: call cancelled: %v", server, err)
	case errors.Is(err, context.DeadlineExceeded):
		return wire.ToolError("server %q: call timed out after %s", server, timeout)
	case errors.Is(err, context.Canceled):
		return wire.ToolError("server %q: call cancelled", server)
	case upstream.ClosedUnder(err):
		return wire.ToolError("server %q: connection closed during the call: %s", server, wire.ErrorText(err))
	}
	return wire.ToolError("server %q: %s", server, wire.ErrorText(err))
}
