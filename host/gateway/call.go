package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// A tools/call, one step after another in callTool: resolve the name in the
// caller's view, admit (tool_call hooks), forward (forward.go), pick the
// result path (the upstream's bytes, rawcall.go, or typed), transform
// (tool_result hooks), answer.

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
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r, nil
	case *upstream.RawToolResult:
		return r.Typed()
	}
	return nil, fmt.Errorf("unexpected result type %T", res)
}

// callTool is the whole call path: resolve, admit, call, transform. The
// result is a *mcp.CallToolResult, or a *rawToolResult for a downstream
// session that takes results as sent (rawResults) when no policy reads
// them.
func (h *Host) callTool(ctx context.Context, caller abi.Caller, name string, args json.RawMessage, meta mcp.Meta, ss *mcp.ServerSession) (res mcp.Result, err error) {
	if h.observer == nil && h.audit == nil {
		return h.call(ctx, caller, name, args, meta, ss, nil)
	}
	start, tr := time.Now(), &callTrace{audit: h.audit != nil}
	defer func() { h.observeCall(tr, start, caller, name, args, res, err) }()
	return h.call(ctx, caller, name, args, meta, ss, tr)
}

// call is callTool; tr, when not nil, collects what the observer and the
// audit log are told.
func (h *Host) call(ctx context.Context, caller abi.Caller, name string, args json.RawMessage, meta mcp.Meta, ss *mcp.ServerSession, tr *callTrace) (mcp.Result, error) {
	if h.closed.Load() {
		return nil, upstream.ErrClosed
	}
	if err := upstream.CheckArguments(args); err != nil {
		return nil, err
	}
	v, err := h.view(ctx, caller)
	if err != nil {
		return nil, err
	}
	r, ok := v.routes[name]
	if !ok {
		return h.hiddenCall(ctx, caller, name, args, tr)
	}
	u := h.upstreamNamed(r.Server)
	if u == nil { // removed by a reload since the view was built
		return nil, unknownTool(name)
	}
	if tr != nil {
		tr.server, tr.tool = r.Server, r.Tool
	}

	annotations := h.cat.Load().Annotations(r)
	if h.wants(abi.HookToolCall) {
		in := &abi.ToolCallInput{Caller: caller, Name: name, Server: r.Server, Tool: r.Tool, Arguments: args, Annotations: annotations}
		t0 := tr.now()
		d, err := h.toolCallPolicy(ctx, in, tr)
		tr.addPolicy(t0)
		if err != nil {
			h.log.Debug("policy failed on a call", "tool", name, "error", err)
			tr.set(CallDenied)
			return errorResult("call to %s refused: %s", name, wire.PolicyMessage(err)), nil
		}
		switch d.Action {
		case abi.ActionAllow, "":
		case abi.ActionDeny:
			tr.set(CallDenied)
			return h.denied(name, d)
		case abi.ActionRewrite:
			if err := upstream.CheckArguments(d.Arguments); err != nil {
				return errorResult("call to %s refused: the policy's rewritten arguments are not valid UTF-8", name), nil
			}
			args = d.Arguments
		case abi.ActionRespond:
			tr.set(CallAnswered)
			return fromABIResult(d.Result)
		default:
			return errorResult("call to %s refused: policy returned unknown action %s", name, wire.CleanText(strconv.Quote(d.Action))), nil
		}
	}

	// A reload swaps servers and policies together (Reconfigure): a call
	// whose server went or changed while it was being admitted may have
	// been admitted by the new policies, which do not cover that server.
	if h.upstreamNamed(r.Server) != u {
		tr.set(CallInvalid)
		return errorResult("call to %s refused: the config was reloaded during the call; call again", name), nil
	}

	params := &mcp.CallToolParams{Name: r.Tool, Arguments: args}
	if len(args) == 0 {
		params.Arguments = nil
	}
	upMeta, done := h.upstreamMeta(ctx, u, ss, meta)
	defer done()
	if u.Config.Transport == upstream.TransportInternal {
		// An in-process server (a tool plugin) is told who calls, under a
		// key no client can set for it: the host's value replaces theirs.
		if upMeta == nil {
			upMeta = mcp.Meta{}
		}
		upMeta[abi.CallerMetaKey] = caller
	}
	params.Meta = upMeta
	wantsResult := h.wants(abi.HookToolResult)
	// Raw calls when the result can go downstream as sent, or be read by
	// policies, which say so when they leave it unchanged (Policy.ToolResult).
	raw := !h.noShortcuts && upstream.RawResults(ss)
	var res *mcp.CallToolResult
	var rawRes json.RawMessage
	upStart := time.Now()
	send := func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		if c := u.RawConn(cs); c != nil && c.Direct() {
			// An in-process tool server's fast path (memconn.go). A
			// session that does not take results as sent gets it typed.
			rawRes, err = c.CallDirect(ctx, &upstream.RawCallParams{Meta: upMeta, Name: r.Tool, Arguments: args})
			if err == nil && !raw {
				res = new(mcp.CallToolResult)
				if err = json.Unmarshal(rawRes, res); err != nil {
					err = fmt.Errorf("calling \"tools/call\": %w", err)
				}
				rawRes = nil
			}
			return err
		}
		if c := u.RawConn(cs); raw && c != nil && upstream.PlainUpstream(cs) {
			rawRes, err = c.CallTool(ctx, &upstream.RawCallParams{Meta: upMeta, Name: r.Tool, Arguments: args})
			return err
		}
		res, err = cs.CallTool(ctx, params)
		return err
	}
	err = h.forward(ctx, ss, u, "tools/call", upMeta, send)
	if err != nil && u.PerUser() {
		// The caller must log in first (oauth mode per_user): asked over
		// the protocol, the call goes on once they have.
		var retry bool
		if retry, err = h.askToAuthorize(ctx, ss, u, err); retry {
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
		res, rawRes = upstreamErrorResult(r.Server, u.Config.Timeout, err), nil
	}
	// The result travels as the upstream's bytes when the go-sdk would accept
	// them and, past policies, the policies saw every one of them; otherwise
	// it is typed, and what goes out is encoded from what policies returned.
	rawOK := rawRes != nil && upstream.CheckToolResult(rawRes) == nil && (!wantsResult || upstream.PoliciesSeeAll(rawRes))
	if rawRes != nil && !rawOK {
		res = new(mcp.CallToolResult)
		if err := json.Unmarshal(rawRes, res); err != nil {
			res = upstreamErrorResult(r.Server, u.Config.Timeout, fmt.Errorf("calling \"tools/call\": %w", err))
		}
	}
	if !wantsResult {
		if rawOK {
			return &upstream.RawToolResult{Raw: rawRes}, nil
		}
		return res, nil
	}
	in := &abi.ToolResultInput{Caller: caller, Name: name, Server: r.Server, Tool: r.Tool, Arguments: args, Annotations: annotations}
	if rawOK {
		in.Result, err = rawABIResult(rawRes)
	} else {
		in.Result, err = toABIResult(res)
	}
	if err != nil {
		tr.set(CallDenied)
		return errorResult("result of %s could not be passed to policies: %v", name, err), nil
	}
	t0 := tr.now()
	out, err := h.toolResultPolicy(ctx, in, tr)
	tr.addPolicy(t0)
	if err != nil {
		h.log.Debug("policy failed on a result", "tool", name, "error", err)
		tr.set(CallDenied)
		return errorResult("result of %s withheld by policy: %s", name, wire.PolicyMessage(err)), nil
	}
	if rawOK && out == in.Result {
		return &upstream.RawToolResult{Raw: rawRes}, nil // unchanged (Policy.ToolResult)
	}
	return fromABIResult(out)
}

// upstreamErrorResult turns a failed upstream call into a tool error that
// names the server and the cause, as MCP asks for tool-level failures.
func upstreamErrorResult(server string, timeout time.Duration, err error) *mcp.CallToolResult {
	var need *upstream.AuthorizationNeeded
	var xf *upstream.ExchangeFailed
	switch {
	case errors.As(err, &need):
		// Not errorText, which hides URL queries, nor cleanText, which
		// cuts long lines: the link, whole, is the point.
		return errorResult("%s", need.Error())
	case errors.As(err, &xf):
		// mcphost's own words and the issuer's (without secrets): the
		// masking of errorText would take half of them for credentials.
		return errorResult("%s", wire.CleanText(xf.Error()))
	case errors.Is(err, ErrShuttingDown):
		return errorResult("server %q: call cancelled: %v", server, err)
	case errors.Is(err, context.DeadlineExceeded):
		return errorResult("server %q: call timed out after %s", server, timeout)
	case errors.Is(err, context.Canceled):
		return errorResult("server %q: call cancelled", server)
	case closedUnder(err):
		return errorResult("server %q: connection closed during the call: %s", server, wire.ErrorText(err))
	}
	return errorResult("server %q: %s", server, wire.ErrorText(err))
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}
