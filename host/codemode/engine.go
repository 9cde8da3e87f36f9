package codemode

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// guestWasm is QuickJS with glue.c (guest/build.sh; guest/quickjs.version
// says which QuickJS and which compiler).
//
//go:embed guest/quickjs.wasm
var guestWasm []byte

// Defaults and bounds of Limits.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMemory     = 64 << 20
	DefaultMaxCalls   = 50
	DefaultMaxOutput  = 256 << 10
	DefaultMaxRunning = 8

	// MinMemory is the least memory a run may have: QuickJS's runtime,
	// its 1 MiB stack and a script's first objects.
	MinMemory = 8 << 20
	// MaxMemory is the most: a 32-bit guest addresses 4 GiB, and a run
	// per caller at once must fit the host.
	MaxMemory = 1 << 30
)

// Limits bound one run of a script.
type Limits struct {
	// Timeout bounds a run, tool calls included; when it passes, the
	// guest is stopped wherever it is and a call in flight is cancelled.
	Timeout time.Duration
	// Memory bounds the guest's linear memory, in bytes (a multiple of
	// 64 KiB; less is rounded down). QuickJS's own allocator stops 2 MiB
	// below it, so that a script that allocates too much gets an
	// "out of memory" exception rather than a trap.
	Memory int64
	// MaxCalls bounds the tool calls of a run; past it a call throws.
	MaxCalls int
	// MaxOutput bounds what a run answers, in bytes: the script's value as
	// JSON, and its console lines (each kept to the bound, the rest
	// dropped and said so).
	MaxOutput int
	// MaxRunning bounds the runs of an engine at once (each may take
	// Memory); a run past it waits for a slot, within its Timeout.
	MaxRunning int
}

// WithDefaults returns l with every unset limit set to its default.
func (l Limits) WithDefaults() Limits {
	if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.MaxCalls == 0 {
		l.MaxCalls = DefaultMaxCalls
	}
	if l.MaxOutput == 0 {
		l.MaxOutput = DefaultMaxOutput
	}
	if l.MaxRunning == 0 {
		l.MaxRunning = DefaultMaxRunning
	}
	return l
}

// Check reports limits out of their bounds (after WithDefaults).
func (l Limits) Check() []error {
	var errs []error
	if l.Timeout < 0 {
		errs = append(errs, fmt.Errorf("codemode: timeout %s is negative", l.Timeout))
	}
	if l.Memory < MinMemory || l.Memory > MaxMemory {
		errs = append(errs, fmt.Errorf("codemode: memory %d bytes is out of range (%d MiB to %d MiB)", l.Memory, MinMemory>>20, MaxMemory>>20))
	}
	if l.MaxCalls < 1 {
		errs = append(errs, fmt.Errorf("codemode: max_calls %d must be at least 1", l.MaxCalls))
	}
	if l.MaxOutput < 1024 {
		errs = append(errs, fmt.Errorf("codemode: max_output %d bytes is too small (at least 1024)", l.MaxOutput))
	}
	if l.MaxRunning < 1 {
		errs = append(errs, fmt.Errorf("codemode: max_running %d must be at least 1", l.MaxRunning))
	}
	return errs
}

// jsHeadroom is the memory kept between QuickJS's allocation limit and
// the instance's: the C stack, the glue's buffers, malloc's own books.
const jsHeadroom = 2 << 20

// CallFunc answers one tool call of a script: the tools/call result as
// JSON (an MCP CallToolResult, isError set for a tool's failure or a
// policy's denial), or an error for a call that has no result (a name the
// caller cannot call, arguments that are not valid): the script gets its
// text as an exception.
type CallFunc func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)

// Engine runs scripts: one compiled guest, a fresh instance per run. It is
// safe for concurrent use.
type Engine struct {
	rt     wazero.Runtime
	cm     wazero.CompiledModule
	lim    Limits
	slots  chan struct{} // a token per run in progress (MaxRunning)
	closed atomic.Bool
}

// New compiles the guest under lim (WithDefaults applied; Check must
// pass). Compiling takes a few hundred milliseconds; cache, if not nil,
// keeps the machine code for the next process (a wazero compilation cache
// shared with the plugins is fine: the runtime configuration is part of
// its key).
func New(ctx context.Context, lim Limits, cache wazero.CompilationCache) (*Engine, error) {
	lim = lim.WithDefaults()
	if errs := lim.Check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cfg := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(lim.Memory / 65536))
	if cache != nil {
		cfg = cfg.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	e := &Engine{rt: rt, lim: lim, slots: make(chan struct{}, lim.MaxRunning)}
	if err := instantiateHost(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("codemode: host functions: %w", err)
	}
	cm, err := rt.CompileModule(ctx, guestWasm)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("codemode: compiling the guest: %w", err)
	}
	e.cm = cm
	return e, nil
}

// Limits returns the engine's limits, defaults applied.
func (e *Engine) Limits() Limits { return e.lim }

// Close releases the compiled guest. Runs in flight end with an error.
func (e *Engine) Close(ctx context.Context) error {
	e.closed.Store(true)
	return e.rt.Close(ctx)
}

// ErrClosed is Run's error once the engine is closed.
var ErrClosed = errors.New("codemode: engine closed")

// Outcome is how a run ended.
type Outcome struct {
	// Value is what the script returned, as JSON (null for nothing); nil
	// when it failed.
	Value json.RawMessage
	// Err says why the script failed: its uncaught exception (with the
	// stack), or why it was stopped (its time or memory ran out); "" when
	// it returned.
	Err string
	// Stopped is set when the host stopped the script (time, memory, the
	// guest trapped) rather than the script failing by itself.
	Stopped bool
	// Logs are the script's console lines, in order; Truncated says some
	// were dropped to keep within MaxOutput.
	Logs      []string
	Truncated bool
	// Calls is how many tool calls the script made.
	Calls int
	// Duration is the run's wall time, tool calls included.
	Duration time.Duration
}

// Run runs script with the tools named in tools (the caller's exposed
// names) as functions, each call answered by call (nil: no tool answers).
// A script's own failure
// (an exception, its time or memory running out) is in the Outcome; the
// error is for the host's (the engine closed, the guest could not start).
func (e *Engine) Run(ctx context.Context, script string, tools []string, call CallFunc) (*Outcome, error) {
	if e.closed.Load() {
		return nil, ErrClosed
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, e.lim.Timeout)
	defer cancel()
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	case <-ctx.Done():
		msg := fmt.Sprintf("the script was not started: %d scripts were running (the most at once) until its time limit passed; try again", e.lim.MaxRunning)
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg = "the script was not started: the call was cancelled while it waited for one of the other scripts to end"
		}
		return &Outcome{Err: msg, Stopped: true, Duration: time.Since(start)}, nil
	}
	prelude, err := buildPrelude(tools, e.lim.MaxOutput)
	if err != nil {
		return nil, err
	}
	st := &runState{call: call, maxCalls: e.lim.MaxCalls}
	rctx := context.WithValue(ctx, runKey{}, st)
	mod, err := e.rt.InstantiateModule(rctx, e.cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		if e.closed.Load() {
			return nil, ErrClosed
		}
		if ctx.Err() != nil {
			return &Outcome{Err: stoppedText(ctx, e.lim), Stopped: true, Duration: time.Since(start)}, nil
		}
		return nil, fmt.Errorf("codemode: starting the guest: %w", err)
	}
	defer mod.Close(context.WithoutCancel(ctx))
	status, err := runGuest(rctx, mod, prelude, wrapScript(script), e.lim.Memory-jsHeadroom)
	out := &Outcome{Calls: st.calls, Duration: time.Since(start)}
	switch {
	case err != nil && e.closed.Load():
		return nil, ErrClosed
	case err != nil:
		out.Err, out.Stopped = stoppedText(ctx, e.lim), true
		if ctx.Err() == nil {
			// Not the clock: the guest trapped (its memory ran out where
			// QuickJS could not catch it, or its stack overflowed).
			out.Err = "the script was stopped: " + trapText(err)
		}
		return out, nil
	case status < 0:
		out.Err, out.Stopped = "the script could not start: QuickJS ran out of memory", true
		return out, nil
	case st.status != 0:
		out.Err = limitText(string(st.report), min(e.lim.MaxOutput, maxErrText))
	default:
		if err := out.decodeReport(st.report, e.lim.MaxOutput); err != nil {
			out.Err = err.Error()
		}
	}
	if out.Err != "" && ctx.Err() != nil {
		// The script failed as its time ran out: a tool call it was
		// waiting on was cancelled, and it threw before the clock stopped
		// the instance. The time limit is the cause to report.
		out.Err, out.Stopped = stoppedText(ctx, e.lim), true
	}
	return out, nil
}

// runGuest writes the texts into the instance and calls its run export.
func runGuest(ctx context.Context, mod api.Module, prelude, script string, jsLimit int64) (int32, error) {
	alloc, run := mod.ExportedFunction("alloc"), mod.ExportedFunction("run")
	if alloc == nil || run == nil {
		return 0, errors.New("codemode: the guest does not export alloc and run")
	}
	put := func(s string) (uint64, error) {
		res, err := alloc.Call(ctx, uint64(len(s)+1))
		if err != nil {
			return 0, err
		}
		p := uint32(res[0])
		if p == 0 || !mod.Memory().WriteString(p, s) || !mod.Memory().WriteByte(p+uint32(len(s)), 0) {
			return 0, errors.New("out of memory for the script's text")
		}
		return uint64(p), nil
	}
	pp, err := put(prelude)
	if err != nil {
		return 0, err
	}
	sp, err := put(script)
	if err != nil {
		return 0, err
	}
	res, err := run.Call(ctx, pp, uint64(len(prelude)), sp, uint64(len(script)), uint64(jsLimit))
	if err != nil {
		return 0, err
	}
	return int32(uint32(res[0])), nil
}

// stoppedText says why a run whose guest call failed was stopped.
func stoppedText(ctx context.Context, lim Limits) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("the script was stopped: it ran past its time limit (%s)", lim.Timeout)
	}
	if ctx.Err() != nil {
		return "the script was stopped: the call was cancelled"
	}
	return "the script was stopped"
}

// trapText describes a guest trap for the script's author.
func trapText(err error) string {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return fmt.Sprintf("the engine exited with code %d", exit.ExitCode())
	}
	return fmt.Sprintf("the engine trapped (%s); a script that allocates or recurses without bound ends so", limitText(err.Error(), 200))
}

// limitText cuts s to n bytes, on a rune boundary, saying so.
func limitText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + " [cut]"
}
