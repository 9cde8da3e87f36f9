package gateway

import (
	"context"
	"encoding/json"

	"github.com/mcphost-project/mcphost/abi"
)

// Policy is the seam between MCP routing and the policy plugins: the host
// asks it, and nothing else, what a caller may see and do. plugins.Chain
// implements it; a nil Policy lets everything through unchanged.
//
// A Policy applies its own failure policy (fail open or closed); an error it
// returns means the request must fail closed. One made of several plugins
// tells the recorder in the context of ToolsList, ToolCall and ToolResult
// (decision.Recorder) what each one decided, for the audit log and traces.
type Policy interface {
	// ToolsList returns the tools the caller sees, in order.
	ToolsList(ctx context.Context, in *abi.ToolsListInput) ([]abi.Tool, error)
	// ToolCall admits, denies, rewrites or answers a call.
	ToolCall(ctx context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error)
	// ToolResult transforms an upstream result before the caller sees it.
	// It returns in.Result itself (the same pointer) when it left it as it
	// was, and a new value otherwise: it must not modify in.Result in
	// place, which the host would read as unchanged and deliver the
	// upstream's own bytes.
	ToolResult(ctx context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error)
	// List returns the prompts, resources or resource templates (in.Method
	// says which) the caller sees, in order. It must not modify the input's
	// items in place: return changed entries in new slices.
	List(ctx context.Context, in *abi.ListInput) ([]abi.Item, error)
	// Request admits or denies a request other than tools/call: a
	// client's to an upstream, or an upstream's to a client.
	Request(ctx context.Context, in *abi.RequestInput) (*abi.RequestDecision, error)
	// Message transforms content on its way to the client: a result, a
	// notification's params, or an upstream request's params, as JSON. It
	// returns in.Message itself (the same slice) when it left it as it was,
	// and a new slice otherwise: it must not modify in.Message in place,
	// which the host would read as unchanged and deliver the original.
	Message(ctx context.Context, in *abi.MessageInput) (json.RawMessage, error)
	// Generation changes whenever the policy's behaviour may have changed,
	// so cached tools/list answers can be told apart.
	Generation() uint64
}

// A Policy may also implement the interfaces below, which let the host skip
// work; plugins.Manager implements both. Without them the host asks
// every hook of every method.

// HookWanter is implemented by policies that can tell whether they would
// run a hook at all (plugins.Manager: whether any plugin of the current
// generation has it). The host then skips preparing the hook's input,
// which for results means encoding and decoding the whole result.
type HookWanter interface {
	Wants(hook string) bool
}

// MethodWanter is implemented by policies that can tell whether they would
// run one of the hooks of every other method (list, request, message) for
// a method; the host then skips encoding what it would pass.
type MethodWanter interface {
	WantsMethod(hook, method string) bool
}

// wantsMethod reports whether the policy may act on hook for method.
func (h *Host) wantsMethod(hook, method string) bool {
	if h.policy == nil {
		return false
	}
	if w, ok := h.policy.(MethodWanter); ok {
		return w.WantsMethod(hook, method)
	}
	return true
}

// wants reports whether the policy may act on hook.
func (h *Host) wants(hook string) bool {
	if h.policy == nil {
		return false
	}
	if w, ok := h.policy.(HookWanter); ok {
		return w.Wants(hook)
	}
	return true
}

// ToolsOnly, embedded in a Policy that governs tools alone, lets every
// other method through unchanged, at no cost: the host sees that it wants
// none of them.
type ToolsOnly struct{}

// List passes a listing through.
func (ToolsOnly) List(_ context.Context, in *abi.ListInput) ([]abi.Item, error) { return in.Items, nil }

// Request allows every request.
func (ToolsOnly) Request(context.Context, *abi.RequestInput) (*abi.RequestDecision, error) {
	return &abi.RequestDecision{Action: abi.ActionAllow}, nil
}

// Message passes a message through.
func (ToolsOnly) Message(_ context.Context, in *abi.MessageInput) (json.RawMessage, error) {
	return in.Message, nil
}

// WantsMethod is false: no hook of another method runs.
func (ToolsOnly) WantsMethod(string, string) bool { return false }
