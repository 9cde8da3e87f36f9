package extismhost

// Guarding what the rewriter does not cover.
//
// A module instrument refuses (SIMD, no length import, ...) runs with
// wazero's WithCloseOnContextDone, which checks at loop headers only: a
// guest recursing without a loop was never stopped. So such a module is
// also compiled with a function listener whose Before, run by wazero at the
// entry of every function of the module, stops the guest once the call's
// context is done. Each entry then leaves compiled code for Go: a naive
// fib took 204 ns per call guarded, against 2.8 instrumented and 1.6 as it
// is. Only these modules pay it; slow beats unbounded.
// Leaving for Go also lets the Go scheduler preempt the goroutine, so a
// guest never holds a core against the garbage collector.
//
// Bulk instructions (memory.fill and the like) need nothing more here,
// unlike in the rewriter, which counts each by its size (internal/wasmrewrite):
// between two loop headers or function entries a guarded guest runs code
// bounded by its size, so a bounded number of them, each bounded by the
// capped memory or its table. Guarded, the loop of 33 MB fills of
// testdata/recurse/bulk.wat stopped 12 to 47 ms past a 200 ms timeout, as
// the rewritten one does.
//
// wazero's compilation cache keys on the module's bytes alone, ignoring
// listeners and WithCloseOnContextDone, so guarded modules have a cache
// directory of their own (plugins/runtime.go).

import (
	"context"
	"errors"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// guardEntries is a function listener that stops the guest at a function
// entry when the call's context is done.
var guardEntries = experimental.FunctionListenerFunc(func(ctx context.Context, mod api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	stopIfDone(ctx, mod)
})

// WithEntryGuard returns ctx, for CompileModule, with a listener factory
// that guards every function.
func WithEntryGuard(ctx context.Context) context.Context {
	return experimental.WithFunctionListenerFactory(ctx, experimental.FunctionListenerFactoryFunc(
		func(api.FunctionDefinition) experimental.FunctionListener { return guardEntries }))
}

// stopIfDone stops the guest when ctx is done, as WithCloseOnContextDone
// would: mod (if not nil) is closed with the exit code wazero uses for the
// context's error, and the call fails with it. It returns when ctx is not
// done.
func stopIfDone(ctx context.Context, mod api.Module) {
	var code uint32
	switch err := ctx.Err(); {
	case err == nil:
		return
	case errors.Is(err, context.DeadlineExceeded):
		code = sys.ExitCodeDeadlineExceeded
	default:
		code = sys.ExitCodeContextCanceled
	}
	if mod != nil {
		_ = mod.CloseWithExitCode(ctx, code)
	}
	panic(sys.NewExitError(code))
}

// callContext holds the context of the call an instance is serving, for
// host functions that wazero calls without one (nanosleep). An instance
// serves one call at a time.
type callContext struct{ ctx context.Context }

// Nanosleep is WASI's sleep (poll_oneoff with a clock, which Go's
// time.Sleep and idle scheduler reach): it waits for ns or until the
// call's context is done, and then stops the guest. wazero's own sleeps
// for the whole duration, whatever the context: a guest sleeping an hour
// held its caller for an hour.
func (c *callContext) Nanosleep(ns int64) {
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	stopIfDone(ctx, nil)
	if ns <= 0 {
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		stopIfDone(ctx, nil)
	}
}
