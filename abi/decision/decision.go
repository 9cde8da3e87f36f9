// Package decision is what one policy plugin decided on one hook of a
// call or listing, in the terms of abi/SPEC.md's chain semantics (section
// 7) and failure policy (section 8): the record the plugin chain makes,
// the audit log writes and the traces show. No guest ever sees one.
//
// A caller that wants the decisions puts a recorder in the context of a
// policy call (WithRecorder); the chain tells it each decision as it
// makes it (Recorder). Without one, nothing is recorded and nothing is
// paid for.
package decision

import "context"

// Decision is what one plugin did on one hook. Only plugins that ran
// have one: a plugin without the hook, out of the call's scope or not for
// its caller has none. Its JSON is a decision in an audit line
// (docs/audit.md).
type Decision struct {
	Plugin string `json:"plugin"`
	Hook   string `json:"hook"` // abi.HookToolCall, abi.HookToolResult, abi.HookToolsList or abi.HookRequest
	// Action is Allow, Deny, Rewrite or Respond on tool_call; Changed or
	// Unchanged on tool_result; Deny on tools_list (it hid Tools); Allow or
	// Deny on request (prompts/get, resources/read, ...); Skipped
	// on any hook when the plugin failed and on_error skipped it. A plugin
	// that failed closed is a Deny, with its Error.
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"` // a deny's, as the plugin gave it (or the failure's)
	// Paths are JSON pointers (RFC 6901): the arguments a rewrite changed,
	// or the parts of a result a change touched ("/content/1",
	// "/structuredContent/rows/0/name", "/isError", "/_meta"); at most
	// MaxPaths, the first in document order.
	Paths []string `json:"paths,omitempty"`
	Tools []string `json:"tools,omitempty"` // tools_list: the exposed names it hid
	Error string   `json:"error,omitempty"` // the failure, on one line, when the plugin failed
}

// Actions of a Decision. The first four are the abi package's actions of
// the same names.
const (
	Allow     = "allow"     // tool_call: the plugin let the call through
	Deny      = "deny"      // it refused the call (or failed closed); tools_list: it hid tools
	Rewrite   = "rewrite"   // tool_call: it changed the arguments (Paths)
	Respond   = "respond"   // tool_call: it answered in the tool's place
	Changed   = "changed"   // tool_result: it changed the result (Paths)
	Unchanged = "unchanged" // tool_result: it left the result as it was
	Skipped   = "skipped"   // it failed and on_error = "skip" skipped it (Error)
)

// MaxPaths bounds the Paths of one Decision.
const MaxPaths = 32

type recorderKey struct{}

// WithRecorder returns a copy of ctx that carries record: a policy call
// made with it tells record what each plugin that ran decided, in chain
// order, on the caller's goroutine. A nil record carries nothing.
func WithRecorder(ctx context.Context, record func(Decision)) context.Context {
	if record == nil {
		return ctx
	}
	return context.WithValue(ctx, recorderKey{}, record)
}

// Recorder returns the record function ctx carries, or nil.
func Recorder(ctx context.Context) func(Decision) {
	record, _ := ctx.Value(recorderKey{}).(func(Decision))
	return record
}
