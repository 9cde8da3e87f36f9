package plugins

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestPolicyErrorClientMessage: what a client is told names the plugin,
// the hook and the kind of failure, never the engine's text.
func TestPolicyErrorClientMessage(t *testing.T) {
	t.Parallel()
	trace := errors.New("wasm error: unreachable\nwasm stack trace:\n\tpolicy.$fib(i64) i64\n\tpolicy.tool_call() i32")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&TrapError{Plugin: "p", Hook: "tool_call", Err: trace, Stderr: "panic: secret"}, "crashed"},
		{&TrapError{Plugin: "p", Hook: "tool_call", Memory: true, Err: trace}, "stopped: memory limit reached"},
		{&TrapError{Plugin: "p", Hook: "tool_call", ExitCode: 2}, "exited with code 2"},
		{fmt.Errorf("%w: p: tool_call after 1s", ErrTimeout), "timed out"},
		{&PluginError{Plugin: "p", Hook: "tool_call", Code: 1, Message: "no budget"}, "returned an error: no budget"},
		{&PluginError{Plugin: "p", Hook: "tool_call", Code: 7}, "returned error code 7"},
		{fmt.Errorf("%w: tools[0]: bad", ErrInvalidOutput), "invalid output"},
		{fmt.Errorf("%w: p: 9 bytes", ErrOutputTooLarge), "output too large"},
		{fmt.Errorf("plugins: p: tool_call: %w", context.Canceled), "cancelled"},
		{errors.New("plugins: something else\nwith a second line"), "failed"},
	} {
		pe := &PolicyError{Plugin: "p", Hook: "tool_call", Err: tc.err}
		want := `policy "p" failed in tool_call: ` + tc.want
		if got := pe.ClientMessage(); got != want {
			t.Errorf("%v: ClientMessage = %q, want %q", tc.err, got, want)
		}
		if !errors.Is(pe, tc.err) || !strings.Contains(pe.Error(), tc.err.Error()) {
			t.Errorf("%v: Error %q loses the cause", tc.err, pe.Error())
		}
	}
}
