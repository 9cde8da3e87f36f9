package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
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
	case *rawToolResult:
		return r.typed()
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
		return nil, ErrClosed
	}
	if err := checkArguments(args); err != nil {
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
	u := h.upstreamNamed(r.server)
	if u == nil { // removed by a reload since the view was built
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	if tr != nil {
		tr.server, tr.tool = r.server, r.tool
	}

	annotations := h.cat.Load().annotations(r)
	if h.wants(abi.HookToolCall) {
		in := &abi.ToolCallInput{Caller: caller, Name: name, Server: r.server, Tool: r.tool, Arguments: args, Annotations: annotations}
		t0 := tr.now()
		d, err := h.toolCallPolicy(ctx, in, tr)
		tr.addPolicy(t0)
		if err != nil {
			h.log.Debug("policy failed on a call", "tool", name, "error", err)
			tr.set(CallDenied)
			return errorResult("call to %s refused: %s", name, policyMessage(err)), nil
		}
		switch d.Action {
		case abi.ActionAllow, "":
		case abi.ActionDeny:
			tr.set(CallDenied)
			return h.denied(name, d)
		case abi.ActionRewrite:
			if err := checkArguments(d.Arguments); err != nil {
				return errorResult("call to %s refused: the policy's rewritten arguments are not valid UTF-8", name), nil
			}
			args = d.Arguments
		case abi.ActionRespond:
			tr.set(CallAnswered)
			return fromABIResult(d.Result)
		default:
			return errorResult("call to %s refused: policy returned unknown action %s", name, cleanText(strconv.Quote(d.Action))), nil
		}
	}

	// A reload swaps servers and policies together (Reconfigure): a call
	// whose server went or changed while it was being admitted may have
	// been admitted by the new policies, which do not cover that server.
	if h.upstreamNamed(r.server) != u {
		tr.set(CallInvalid)
		return errorResult("call to %s refused: the config was reloaded during the call; call again", name), nil
	}

	params := &mcp.CallToolParams{Name: r.tool, Arguments: args}
	if len(args) == 0 {
		params.Arguments = nil
	}
	upMeta, done := h.upstreamMeta(ctx, ss, meta)
	defer done()
	if u.cfg.Transport == TransportInternal {
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
	// policies that say so when they leave it unchanged.
	raw := !h.noShortcuts && rawResults(ss) && (!wantsResult || h.keepsResults())
	var res *mcp.CallToolResult
	var rawRes json.RawMessage
	upStart := time.Now()
	send := func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		if c := u.rawConn(cs); c != nil && c.direct() {
			// An in-process tool server's fast path (memconn.go). A
			// session that does not take results as sent gets it typed.
			rawRes, err = c.callDirect(ctx, &rawCallParams{Meta: upMeta, Name: r.tool, Arguments: args})
			if err == nil && !raw {
				res = new(mcp.CallToolResult)
				if err = json.Unmarshal(rawRes, res); err != nil {
					err = fmt.Errorf("calling \"tools/call\": %w", err)
				}
				rawRes = nil
			}
			return err
		}
		if c := u.rawConn(cs); raw && c != nil && plainUpstream(cs) {
			rawRes, err = c.callTool(ctx, &rawCallParams{Meta: upMeta, Name: r.tool, Arguments: args})
			return err
		}
		res, err = cs.CallTool(ctx, params)
		return err
	}
	err = h.forward(ctx, ss, u, "tools/call", upMeta, send)
	if err != nil && u.perUser() {
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
		res, rawRes = upstreamErrorResult(r.server, u.cfg.Timeout, err), nil
	}
	// The result travels as the upstream's bytes when the go-sdk would accept
	// them and, past policies, the policies saw every one of them; otherwise
	// it is typed, and what goes out is encoded from what policies returned.
	rawOK := rawRes != nil && checkToolResult(rawRes) == nil && (!wantsResult || policiesSeeAll(rawRes))
	if rawRes != nil && !rawOK {
		res = new(mcp.CallToolResult)
		if err := json.Unmarshal(rawRes, res); err != nil {
			res = upstreamErrorResult(r.server, u.cfg.Timeout, fmt.Errorf("calling \"tools/call\": %w", err))
		}
	}
	if !wantsResult {
		if rawOK {
			return &rawToolResult{raw: rawRes}, nil
		}
		return res, nil
	}
	in := &abi.ToolResultInput{Caller: caller, Name: name, Server: r.server, Tool: r.tool, Arguments: args, Annotations: annotations}
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
		return errorResult("result of %s withheld by policy: %s", name, policyMessage(err)), nil
	}
	if rawOK && out == in.Result {
		return &rawToolResult{raw: rawRes}, nil // unchanged (ResultKeeper)
	}
	return fromABIResult(out)
}

// upstreamErrorResult turns a failed upstream call into a tool error that
// names the server and the cause, as MCP asks for tool-level failures.
func upstreamErrorResult(server string, timeout time.Duration, err error) *mcp.CallToolResult {
	var need *AuthorizationNeeded
	var xf *ExchangeFailed
	switch {
	case errors.As(err, &need):
		// Not errorText, which hides URL queries, nor cleanText, which
		// cuts long lines: the link, whole, is the point.
		return errorResult("%s", need.Error())
	case errors.As(err, &xf):
		// mcphost's own words and the issuer's (without secrets): the
		// masking of errorText would take half of them for credentials.
		return errorResult("%s", cleanText(xf.Error()))
	case errors.Is(err, ErrShuttingDown):
		return errorResult("server %q: call cancelled: %v", server, err)
	case errors.Is(err, context.DeadlineExceeded):
		return errorResult("server %q: call timed out after %s", server, timeout)
	case errors.Is(err, context.Canceled):
		return errorResult("server %q: call cancelled", server)
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errorResult("server %q: connection closed during the call: %s", server, errorText(err))
	}
	return errorResult("server %q: %s", server, errorText(err))
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// hiddenCall answers a call of a name the caller's listing does not show.
// When it names a tool of the catalog, the policies' tool_call hooks are
// asked about it, so that a tool hidden by a policy is refused with that
// policy's reason (an error result, as for any denial), and a model or
// user can tell a policy from a typo. A policy may ask to stay invisible
// (a deny with hidden set), and a tool no policy refuses (hidden by a
// listing alone) is not called either: both answer "unknown tool".
func (h *Host) hiddenCall(ctx context.Context, caller abi.Caller, name string, args json.RawMessage, tr *callTrace) (mcp.Result, error) {
	unknown := fmt.Errorf("%w %q", ErrUnknownTool, name)
	cat := h.cat.Load()
	r, ok := cat.routes[name]
	if !ok {
		return h.notListedYet(ctx, caller, name, tr)
	}
	if !h.wants(abi.HookToolCall) {
		return nil, unknown
	}
	in := &abi.ToolCallInput{Caller: caller, Name: name, Server: r.server, Tool: r.tool, Arguments: args, Annotations: cat.annotations(r)}
	if tr != nil {
		// For the audit line; the metrics keep such calls unlabelled.
		tr.server, tr.tool, tr.hidden = r.server, r.tool, true
	}
	t0 := tr.now()
	d, err := h.toolCallPolicy(ctx, in, tr)
	tr.addPolicy(t0)
	if err != nil || d.Action != abi.ActionDeny {
		return nil, unknown
	}
	if !d.Hidden {
		tr.set(CallDenied)
	}
	return h.denied(name, d)
}

// denied answers a call a policy denied: an error result with its reason,
// or, for a denial that asks to stay hidden, "unknown tool" (the reason
// goes to the log).
func (h *Host) denied(name string, d *abi.CallDecision) (mcp.Result, error) {
	if d.Hidden {
		h.log.Debug("call refused by policy, answered as for an unknown tool", "tool", name, "reason", d.Reason)
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	reason := d.Reason
	if reason == "" {
		reason = "denied by policy"
	}
	return errorResult("call to %s denied: %s", name, cleanText(reason)), nil
}

// notListedYet answers a call of a name that no catalog tool has. Under
// the prefix of a server that has never listed its tools (it has not
// connected), and only if the caller's policies would show and admit a
// tool of that name (asked as for any call: the listing of that one tool,
// then tool_call), it is an error result that names the server and what it
// waits for (an OAuth login: where to log in), rather than "unknown tool";
// a caller the policies keep from the server learns nothing of it.
func (h *Host) notListedYet(ctx context.Context, caller abi.Caller, name string, tr *callTrace) (mcp.Result, error) {
	unknown := fmt.Errorf("%w %q", ErrUnknownTool, name)
	sep := h.Config().Tools.Separator
	var u *upstream
	for _, c := range h.upstreamList() {
		if strings.HasPrefix(name, c.cfg.Name+sep) && (u == nil || len(c.cfg.Name) > len(u.cfg.Name)) {
			u = c
		}
	}
	if u == nil {
		return nil, unknown
	}
	st := u.status()
	_, oauth := u.oauth.(*codeFlow)
	waitsForLogin := oauth && (st.State == StateAuthorizing || st.State == StateUnauthorized)
	if !waitsForLogin && (st.Tools > 0 || st.State == StateConnected || u.isHeld()) {
		return nil, unknown // its tools are known, and name is not one; or an operator took them away
	}
	tool := abi.Tool{Name: name, Server: u.cfg.Name, Tool: strings.TrimPrefix(name, u.cfg.Name+sep)}
	if h.wants(abi.HookToolsList) {
		shown, err := h.policy.ToolsList(ctx, &abi.ToolsListInput{Caller: caller, Tools: []abi.Tool{tool}})
		if err != nil || !slices.ContainsFunc(shown, func(t abi.Tool) bool { return t.Name == name }) {
			return nil, unknown
		}
	}
	if h.wants(abi.HookToolCall) {
		in := &abi.ToolCallInput{Caller: caller, Name: name, Server: tool.Server, Tool: tool.Tool}
		if tr != nil {
			tr.server, tr.tool, tr.hidden = tool.Server, tool.Tool, true
		}
		t0 := tr.now()
		d, err := h.toolCallPolicy(ctx, in, tr)
		tr.addPolicy(t0)
		switch {
		case err != nil:
			return nil, unknown
		case d.Action == abi.ActionDeny:
			if !d.Hidden {
				tr.set(CallDenied)
			}
			return h.denied(name, d)
		}
	}
	tr.set(CallUpstreamError)
	if waitsForLogin {
		msg := (&AuthorizationNeeded{Server: u.cfg.Name, URL: st.AuthURL}).Error()
		if u.perUser() {
			// The gateway's own login lists the tools; callers' logins
			// come after.
			msg = fmt.Sprintf("server %q lists its tools once mcphost has its own login, which it does not have yet: an operator opens the link in `mcphost status` (or runs: mcphost auth login %s CONFIG); each caller then authorizes for themself", u.cfg.Name, u.cfg.Name)
		} else if st.State == StateUnauthorized {
			msg = fmt.Sprintf("server %q is not authorized: %s; the next connect asks for a login (mcphost status shows the link, or run: mcphost auth login %s CONFIG)", u.cfg.Name, st.Error, u.cfg.Name)
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
	}
	why := "is still connecting"
	if st.State == StateFailed {
		why = "could not be started or reached; mcphost retries with backoff"
	} else if st.State == StateDisconnected {
		why = "is disconnected"
	}
	// Not the server's error, which may hold what only operators should
	// read: they have it in mcphost status.
	return errorResult("call to %s refused: server %q has not listed its tools yet: it %s (an operator sees why in mcphost status)", name, u.cfg.Name, why), nil
}
