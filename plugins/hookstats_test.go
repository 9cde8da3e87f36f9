package plugins

import (
	"context"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

// TestHookStats: each guest call of a hook is counted with its latency,
// and a trap is a failure of the trap kind; a hook the plugin lacks has no
// counters.
func TestHookStats(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	p := load(t, rt, policy(t, "stats", "mode.tool_result", "panic"))
	ctx := context.Background()
	for range 3 {
		if _, err := p.Call(ctx, abi.HookToolCall, callInput(t, `{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Call(ctx, abi.HookToolResult, []byte(`{"caller":{},"name":"s__t","server":"s","tool":"t","result":{"content":[]}}`)); err == nil {
		t.Fatal("the panicking hook succeeded")
	}
	byHook := map[string]HookStats{}
	for _, s := range p.HookStats() {
		byHook[s.Hook] = s
	}
	call, result := byHook[abi.HookToolCall], byHook[abi.HookToolResult]
	if call.Calls != 3 || call.Failures != 0 || call.Sum <= 0 || call.Buckets[len(HookBuckets)-1] > 3 {
		t.Errorf("tool_call stats %+v", call)
	}
	for i := 1; i < len(call.Buckets); i++ {
		if call.Buckets[i] < call.Buckets[i-1] {
			t.Fatalf("buckets are not cumulative: %v", call.Buckets)
		}
	}
	if result.Calls != 1 || result.Failures != 1 || result.Traps != 1 || result.Timeouts != 0 {
		t.Errorf("tool_result stats %+v", result)
	}
	if _, ok := byHook[abi.HookMessage]; ok {
		t.Error("counters for a hook the plugin lacks")
	}
}
