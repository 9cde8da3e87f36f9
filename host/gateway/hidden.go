package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/toolset"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// Calls of names the caller's view does not show: a tool hidden from
// them (the policies say why, or nothing), or a tool of a server that has
// not listed its tools yet (the caller hears why, if the policies let
// them see the server).

// hiddenCall answers a call of a name the caller's listing does not show.
// When it names a tool of the catalog, the policies' tool_call hooks are
// asked about it, so that a tool hidden by a policy is refused with that
// policy's reason (an error result, as for any denial), and a model or
// user can tell a policy from a typo. A policy may ask to stay invisible
// (a deny with hidden set), and a tool no policy refuses (hidden by a
// listing alone) is not called either: both answer "unknown tool".
func (h *Host) hiddenCall(ctx context.Context, caller abi.Caller, name string, args json.RawMessage, tr *callTrace) (mcp.Result, error) {
	cat := h.cat.Load()
	r, ok := cat.Routes[name]
	if !ok {
		return h.notListedYet(ctx, caller, name, tr)
	}
	if !toolset.FromContext(ctx).Includes(r.Server, r.Tool) {
		return nil, unknownTool(name) // whatever policies would say
	}
	if h.wants(abi.HookToolCall) {
		in := &abi.ToolCallInput{Caller: caller, Name: name, Server: r.Server, Tool: r.Tool, Arguments: args, Annotations: cat.Annotations(r)}
		if res, refused, err := h.refuseHidden(ctx, in, tr); refused {
			return res, err
		}
	}
	return nil, unknownTool(name)
}

// refuseHidden asks the tool_call policies about in, a call of a tool the
// caller's view does not show, and reports whether they refused it, with
// the answer: a denial (an error result with its reason, or unknown tool
// for a denial that asks to stay hidden), or unknown tool when a policy
// failed. A tool they allow is for the caller to answer.
func (h *Host) refuseHidden(ctx context.Context, in *abi.ToolCallInput, tr *callTrace) (_ mcp.Result, refused bool, _ error) {
	if tr != nil {
		// For the audit line; the metrics keep such calls unlabelled.
		tr.server, tr.tool, tr.hidden = in.Server, in.Tool, true
	}
	t0 := tr.now()
	d, err := h.toolCallPolicy(ctx, in, tr)
	tr.addPolicy(t0)
	switch {
	case err != nil:
		return nil, true, unknownTool(in.Name)
	case d.Action != abi.ActionDeny:
		return nil, false, nil
	}
	if !d.Hidden {
		tr.set(CallDenied)
	}
	res, err := h.denied(in.Name, d)
	return res, true, err
}

// unknownTool is the error for a name the caller cannot call.
func unknownTool(name string) error { return fmt.Errorf("%w %q", ErrUnknownTool, name) }

// denied answers a call a policy denied: an error result with its reason,
// or, for a denial that asks to stay hidden, "unknown tool" (the reason
// goes to the log).
func (h *Host) denied(name string, d *abi.CallDecision) (mcp.Result, error) {
	if d.Hidden {
		h.log.Debug("call refused by policy, answered as for an unknown tool", "tool", name, "reason", d.Reason)
		return nil, unknownTool(name)
	}
	reason := d.Reason
	if reason == "" {
		reason = "denied by policy"
	}
	return wire.ToolError("call to %s denied: %s", name, wire.CleanText(reason)), nil
}

// notListedYet answers a call of a name that no catalog tool has. Under
// the prefix of a server that has never listed its tools (it has not
// connected), and only if the caller's policies would show and admit a
// tool of that name (asked as for any call: the listing of that one tool,
// then tool_call), it is an error result that names the server and what it
// waits for (an OAuth login: where to log in), rather than "unknown tool";
// a caller the policies keep from the server learns nothing of it.
func (h *Host) notListedYet(ctx context.Context, caller abi.Caller, name string, tr *callTrace) (mcp.Result, error) {
	sep := h.Config().Tools.Separator
	var u *upstream.Server
	for _, c := range h.upstreamList() {
		if strings.HasPrefix(name, c.Config.Name+sep) && (u == nil || len(c.Config.Name) > len(u.Config.Name)) {
			u = c
		}
	}
	if u == nil {
		return nil, unknownTool(name)
	}
	st := u.Status()
	waitsForLogin := u.LogsIn() && (st.State == upstream.StateAuthorizing || st.State == upstream.StateUnauthorized)
	if !waitsForLogin && (st.Tools > 0 || st.State == upstream.StateConnected || u.IsHeld()) {
		return nil, unknownTool(name) // its tools are known, and name is not one; or an operator took them away
	}
	tool := abi.Tool{Name: name, Server: u.Config.Name, Tool: strings.TrimPrefix(name, u.Config.Name+sep)}
	if !toolset.FromContext(ctx).Includes(tool.Server, tool.Tool) {
		return nil, unknownTool(name)
	}
	if h.wants(abi.HookToolsList) {
		shown, err := h.policy.ToolsList(ctx, &abi.ToolsListInput{Caller: caller, Tools: []abi.Tool{tool}})
		if err != nil || !slices.ContainsFunc(shown, func(t abi.Tool) bool { return t.Name == name }) {
			return nil, unknownTool(name)
		}
	}
	if h.wants(abi.HookToolCall) {
		in := &abi.ToolCallInput{Caller: caller, Name: name, Server: tool.Server, Tool: tool.Tool}
		if res, refused, err := h.refuseHidden(ctx, in, tr); refused {
			return res, err
		}
	}
	tr.set(CallUpstreamError)
	if waitsForLogin {
		msg := (&upstream.AuthorizationNeeded{Server: u.Config.Name, URL: st.AuthURL}).Error()
		if u.PerUser() {
			// The gateway's own login lists the tools; callers' logins
			// come after.
			msg = fmt.Sprintf("server %q lists its tools once mcphost has its own login, which it does not have yet: an operator opens the link in `mcphost status` (or runs: mcphost auth login %s CONFIG); each caller then authorizes for themself", u.Config.Name, u.Config.Name)
		} else if st.State == upstream.StateUnauthorized {
			msg = fmt.Sprintf("server %q is not authorized: %s; the next connect asks for a login (mcphost status shows the link, or run: mcphost auth login %s CONFIG)", u.Config.Name, st.Error, u.Config.Name)
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
	}
	why := "is still connecting"
	if st.State == upstream.StateFailed {
		why = "could not be started or reached; mcphost retries with backoff"
	} else if st.State == upstream.StateDisconnected {
		why = "is disconnected"
	}
	// Not the server's error, which may hold what only operators should
	// read: they have it in mcphost status.
	return wire.ToolError("call to %s refused: server %q has not listed its tools yet: it %s (an operator sees why in mcphost status)", name, u.Config.Name, why), nil
}
