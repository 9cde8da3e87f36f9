package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/telemetry"
)

// AuditOptions turn the audit log on (Options.Audit): an entry per
// tools/call, with what each plugin decided, handed to Log.
type AuditOptions struct {
	// Log receives the entries; Record must not block (audit.Log never
	// does).
	Log interface{ Record(*audit.Entry) }
	// Arguments and Results put the call's arguments (as the client sent
	// them) and its result (as the client got it) in the entry; the Log
	// redacts them before writing.
	Arguments, Results bool
	// Listings adds an entry whenever the tools policies hide from a
	// caller's listing change (the first listing of a caller included).
	Listings bool
}

// note records one plugin's decision on the call.
func (tr *callTrace) note(d decision.Decision) { tr.decisions = append(tr.decisions, d) }

// toolCallPolicy runs the tool_call hooks, collecting their decisions in
// tr when auditing, and tracing them when tracing (tracing.go).
func (h *Host) toolCallPolicy(ctx context.Context, in *abi.ToolCallInput, tr *callTrace) (d *abi.CallDecision, err error) {
	ctx, span, note := h.hookSpan(ctx, abi.HookToolCall, tr)
	if span != nil {
		defer func() { telemetry.Error(span, err); span.End() }()
	}
	return h.policy.ToolCall(decision.WithRecorder(ctx, note), in)
}

// toolResultPolicy runs the tool_result hooks, likewise.
func (h *Host) toolResultPolicy(ctx context.Context, in *abi.ToolResultInput, tr *callTrace) (out *abi.CallToolResult, err error) {
	ctx, span, note := h.hookSpan(ctx, abi.HookToolResult, tr)
	if span != nil {
		defer func() { telemetry.Error(span, err); span.End() }()
	}
	return h.policy.ToolResult(decision.WithRecorder(ctx, note), in)
}

// auditCall hands the audit log the entry of a call that ended with res
// or err (tr.outcome already set).
func (h *Host) auditCall(tr *callTrace, start time.Time, caller abi.Caller, name string, args json.RawMessage, res mcp.Result, err error) {
	e := &audit.Entry{
		ID:           audit.NewID(start),
		Time:         start.UTC(),
		Caller:       audit.CallerOf(caller),
		Name:         audit.BoundedName(name),
		Server:       tr.server,
		Tool:         tr.tool,
		Decisions:    tr.decisions,
		Outcome:      tr.outcome,
		Quota:        tr.quota,
		DurationMs:   audit.Millis(time.Since(start)),
		UpstreamMs:   audit.Millis(tr.upstream),
		PolicyMs:     audit.Millis(tr.policy),
		RequestBytes: len(args),
	}
	if err == nil && res != nil {
		out, shared := wire.ResultBytes(res)
		if shared && h.audit.Results {
			// The log writes it later, from another goroutine: its own copy.
			out = bytes.Clone(out)
		}
		e.ResponseBytes = len(out)
		if h.audit.Results {
			e.Result = out
		}
	}
	if h.audit.Arguments && len(args) > 0 {
		e.Arguments = bytes.Clone(args)
	}
	h.audit.Log.Record(e)
}

// requestTrace collects what each plugin decided on one request.
type requestTrace struct{ decisions []decision.Decision }

func (r *requestTrace) note(d decision.Decision) { r.decisions = append(r.decisions, d) }

// auditRequest hands the audit log the line of a request of another method
// than tools/call: its admission (the upstream's answer is not in it).
func (h *Host) auditRequest(start time.Time, caller abi.Caller, method, server, name string, decisions []decision.Decision, err error) {
	outcome := CallOK
	if err != nil {
		outcome = CallDenied
	}
	took := audit.Millis(time.Since(start)) // all of it the policies'
	h.audit.Log.Record(&audit.Entry{
		ID:         audit.NewID(start),
		Time:       start.UTC(),
		Kind:       audit.KindRequest,
		Method:     method,
		Caller:     audit.CallerOf(caller),
		Name:       audit.BoundedName(name),
		Server:     server,
		Decisions:  decisions,
		Outcome:    outcome,
		DurationMs: took,
		PolicyMs:   took,
	})
}

// listTools runs policy's listing for caller; with an audit log that wants
// listings, recording the policy's decisions, writing an entry when the
// tools policies hide from the caller changed: the first listing that
// hides any, each change of which tools or which policies, and the listing
// that hides none again.
func (h *Host) listTools(ctx context.Context, policy Policy, in *abi.ToolsListInput) ([]abi.Tool, error) {
	if h.audit == nil || !h.audit.Listings {
		return policy.ToolsList(ctx, in)
	}
	start := time.Now()
	var steps []decision.Decision
	tools, err := policy.ToolsList(decision.WithRecorder(ctx, func(d decision.Decision) { steps = append(steps, audit.MaskDecision(d)) }), in)
	if err != nil {
		return nil, err
	}
	key, err := json.Marshal(in.Caller)
	if err != nil || !h.listings.Changed(string(key), steps) {
		return tools, nil
	}
	outcome := CallOK
	if len(steps) > 0 {
		outcome = CallDenied
	}
	took := audit.Millis(time.Since(start))
	h.audit.Log.Record(&audit.Entry{
		ID: audit.NewID(start), Time: start.UTC(), Kind: audit.KindListing, Caller: audit.CallerOf(in.Caller),
		Name: "tools/list", Decisions: steps, Outcome: outcome, DurationMs: took, PolicyMs: took,
	})
	return tools, nil
}

// callOutcome is the outcome of a call that ended with res or err, for
// the audit log and the metrics.
func callOutcome(tr *callTrace, res mcp.Result, err error) string {
	if tr.outcome != "" {
		return tr.outcome
	}
	switch {
	case errors.Is(err, ErrUnknownTool):
		return CallUnknown
	case err != nil:
		return CallInvalid
	case wire.ResultIsError(res):
		return CallToolError
	}
	return CallOK
}
