package host

import (
	"context"

	"github.com/mcphost-project/mcphost/abi"
)

// Policy is the seam between MCP routing and the policy plugins: the host
// asks it, and nothing else, what a caller may see and do. plugins.Chain
// implements it; a nil Policy lets everything through unchanged.
//
// A Policy applies its own failure policy (fail open or closed); an error it
// returns means the request must fail closed.
type Policy interface {
	// ToolsList returns the tools the caller sees, in order.
	ToolsList(ctx context.Context, in *abi.ToolsListInput) ([]abi.Tool, error)
	// ToolCall admits, denies, rewrites or answers a call.
	ToolCall(ctx context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error)
	// ToolResult transforms an upstream result before the caller sees it.
	ToolResult(ctx context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error)
	// Generation changes whenever the policy's behaviour may have changed,
	// so cached tools/list answers can be told apart.
	Generation() uint64
}

// hookWanter is implemented by policies that can tell whether they would
// run a hook at all (plugins.Manager does: whether any plugin of the
// current generation has it). The host then skips preparing the hook's
// input, which for results means encoding and decoding the whole result.
type hookWanter interface {
	Wants(hook string) bool
}

// resultKeeper is implemented by policies whose ToolResult never modifies
// the result it is given and returns that same pointer when it leaves the
// result as it was (plugins.Manager does: guests' answers are decoded into
// new values). The host may then send the upstream's own bytes instead of
// re-encoding the result.
type resultKeeper interface {
	KeepsResults() bool
}

// keepsResults reports whether ToolResult returning its input means the
// result is unchanged.
func (h *Host) keepsResults() bool {
	k, ok := h.policy.(resultKeeper)
	return ok && k.KeepsResults()
}

// wants reports whether the policy may act on hook.
func (h *Host) wants(hook string) bool {
	if h.policy == nil {
		return false
	}
	if w, ok := h.policy.(hookWanter); ok {
		return w.Wants(hook)
	}
	return true
}
