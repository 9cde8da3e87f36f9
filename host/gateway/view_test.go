package gateway

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestViewCacheSharesComputation checks that callers missing the same key
// at once wait for one computation, and get its view.
func TestViewCacheSharesComputation(t *testing.T) {
	var c viewCache
	c.init()
	k := viewKey{catalog: 1, generation: 2, caller: "x"}
	release := make(chan struct{})
	var computed atomic.Int32
	want := &view{}
	compute := func() (*view, error) {
		computed.Add(1)
		<-release
		return want, nil
	}

	const callers = 8
	var started, done sync.WaitGroup
	got := make([]*view, callers)
	// The first caller computes; the others join once it is pending.
	done.Add(1)
	go func() {
		defer done.Done()
		got[0], _ = c.getOrCompute(context.Background(), k, compute)
	}()
	waitPending(&c)
	for i := 1; i < callers; i++ {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			got[i], _ = c.getOrCompute(context.Background(), k, compute)
		}()
	}
	started.Wait()
	close(release)
	done.Wait()
	if n := computed.Load(); n != 1 {
		t.Fatalf("computed %d times, want 1", n)
	}
	for i, v := range got {
		if v != want {
			t.Fatalf("caller %d got %p, want %p", i, v, want)
		}
	}
	if v, err := c.getOrCompute(context.Background(), k, func() (*view, error) { t.Fatal("recomputed a cached view"); return nil, nil }); err != nil || v != want {
		t.Fatalf("cached: %p, %v", v, err)
	}
}

// TestViewCacheErrorsAreNotCached checks that a failed computation is
// retried by the next caller, and that a waiter can give up.
func TestViewCacheErrorsAreNotCached(t *testing.T) {
	var c viewCache
	c.init()
	k := viewKey{caller: "y"}
	boom := errors.New("policy failed")
	if _, err := c.getOrCompute(context.Background(), k, func() (*view, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("first: %v", err)
	}
	want := &view{}
	if v, err := c.getOrCompute(context.Background(), k, func() (*view, error) { return want, nil }); err != nil || v != want {
		t.Fatalf("after a failure: %p, %v", v, err)
	}

	// A waiter whose context ends returns at once; the computation goes on.
	k2 := viewKey{caller: "z"}
	release := make(chan struct{})
	go c.getOrCompute(context.Background(), k2, func() (*view, error) { <-release; return want, nil })
	waitPending(&c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.getOrCompute(ctx, k2, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	close(release)
}

// waitPending returns once a computation is pending in c.
func waitPending(c *viewCache) {
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n > 0 {
			return
		}
		runtime.Gosched()
	}
}
