package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
)

// Outcomes of a tools/call, as an Observer hears them.
const (
	CallOK            = "ok"             // the tool answered
	CallToolError     = "tool_error"     // the tool answered with isError
	CallUpstreamError = "upstream_error" // the server failed, went away or was unreachable
	CallTimeout       = "timeout"        // the server did not answer within its timeout
	CallDenied        = "denied"         // a policy denied, or failed closed
	CallAnswered      = "answered"       // a policy answered in the tool's place (respond)
	CallUnknown       = "unknown_tool"   // no tool of that name for the caller
	CallInvalid       = "invalid"        // the request itself was refused (bad arguments, closed host)
	CallQuota         = "quota"          // a quota refused the call (Config.Quotas)
)

// Observer hears what the host does, for metrics. Its methods run on the
// request's goroutine: they must be quick and must not block.
type Observer interface {
	// ToolCall is told of every tools/call once it is answered: the server
	// and tool ("" when the name routes nowhere), the outcome (Call*), and
	// where the time went.
	ToolCall(server, tool, outcome string, t CallTimes)
	// ToolsListBuilt is told of every tool listing computed for a caller
	// through the policies (a cached one is not computed again), with the
	// time it took and its error, if any.
	ToolsListBuilt(d time.Duration, err error)
}

// CatalogObserver is an Observer told the catalog's tools each time the
// catalog changes, so that what it keeps per server and tool can follow:
// host/metrics drops the series of tools that left.
type CatalogObserver interface {
	CatalogChanged(tools []abi.Tool)
}

// QuotaObserver is an Observer told of every call a quota refuses, by the
// quota's name and the kind of limit (quota.KindCalls or
// quota.KindConcurrent).
type QuotaObserver interface {
	QuotaRefused(quota, kind string)
}

// CallTimes says where a call's time went.
type CallTimes struct {
	Total    time.Duration // from arrival in the host to the answer
	Upstream time.Duration // waiting on the server; 0 when it was not called
	Policy   time.Duration // in the tool_call and tool_result hooks
}

// callTrace collects what an Observer and the audit log are told of one
// call. A call with neither has none (nil), and pays nothing for it.
type callTrace struct {
	server, tool string
	hidden       bool   // server and tool name a tool the caller's listing does not show
	quota        string // the quota that refused the call (outcome CallQuota)
	outcome      string
	upstream     time.Duration
	policy       time.Duration
	// audit is set when the audit log wants the call: the policy hooks
	// then run with a decision recorder, and decisions collects what each
	// plugin did, in order (auditing.go).
	audit     bool
	decisions []decision.Decision
}

// now is time.Now when tracing, for the spans addPolicy measures.
func (tr *callTrace) now() time.Time {
	if tr == nil {
		return time.Time{}
	}
	return time.Now()
}

func (tr *callTrace) addPolicy(since time.Time) {
	if tr != nil {
		tr.policy += time.Since(since)
	}
}

// set records the outcome; tr may be nil (no observer).
func (tr *callTrace) set(outcome string) {
	if tr != nil {
		tr.outcome = outcome
	}
}

// observeCall tells the observer and the audit log of a call that ended
// with res or err.
func (h *Host) observeCall(tr *callTrace, start time.Time, caller abi.Caller, name string, args json.RawMessage, res mcp.Result, err error) {
	tr.outcome = callOutcome(tr, res, err)
	if h.observer != nil {
		server, tool := tr.server, tr.tool
		if tr.hidden {
			server, tool = "", "" // as for any name that routes nowhere (docs/metrics.md)
		}
		h.observer.ToolCall(server, tool, tr.outcome, CallTimes{Total: time.Since(start), Upstream: tr.upstream, Policy: tr.policy})
	}
	if h.audit != nil {
		h.auditCall(tr, start, caller, name, args, res, err)
	}
}

// upstreamOutcome classifies a failed upstream call.
func upstreamOutcome(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return CallTimeout
	}
	return CallUpstreamError
}
