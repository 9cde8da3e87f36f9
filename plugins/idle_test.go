package plugins

import (
	"context"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
)

// A warm instance that serves no call for the runtime's IdleTimeout is
// closed, its memory given back; the plugin's next call makes a new one.
func TestIdleInstancesClosed(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{IdleTimeout: 100 * time.Millisecond})
	p := load(t, rt, policy(t, "idle"))
	if st := p.Status(); st.IdleInstances != 1 {
		t.Fatalf("after load: %d idle instances, want the one that described", st.IdleInstances)
	}
	waitIdle := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for p.Status().IdleInstances != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d idle instances after 10 s, want %d", p.Status().IdleInstances, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitIdle(0)
	if _, err := p.Call(context.Background(), abi.HookToolCall, callInput(t, `{}`)); err != nil {
		t.Fatalf("a call after the pool emptied: %v", err)
	}
	if st := p.Status(); st.IdleInstances != 1 || st.Crashes != 0 {
		t.Fatalf("after the call: %d idle instances, %d crashes; want 1 and 0", st.IdleInstances, st.Crashes)
	}
	waitIdle(0)
}
