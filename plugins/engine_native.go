//go:build !mcphost_extism

package plugins

// The native engine: the host side of the Extism ABI implemented in Go on
// raw wazero. Extism's go-sdk (v1.7.1) runs the Extism kernel as a wasm
// module per instance and reaches it from its host functions by looking
// kernel exports up by name on every access; in wazero each lookup builds a
// new call engine (a fresh stack) and, under WithCloseOnContextDone, every
// nested call starts a goroutine to watch the context. A guest built with
// go-pdk makes several such calls per hook, so an empty hook cost tens of
// microseconds and 130 KB. Here the kernel is a Go arena (internal/extismhost),
// the host functions find it through one context value, and the export and
// start functions are looked up once per instance.
//
// Guests see the same imports, with the same signatures and semantics, as
// under the go-sdk: modules built with any Extism PDK run unchanged. The
// go-sdk-based engine is kept behind the mcphost_extism build tag
// (engine_extism.go) for comparison.

import (
	"time"

	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/mcphost-project/mcphost/plugins/internal/extismhost"
	"github.com/mcphost-project/mcphost/plugins/internal/rootfs"
	"github.com/mcphost-project/mcphost/plugins/internal/wasmrewrite"
)

// compiled is one compiled guest module in its own wazero runtime, which
// also holds WASI and the Extism host functions it imports.
type compiled struct {
	rt           wazero.Runtime
	cm           wazero.CompiledModule
	instrumented bool // loops and calls check the context; compiled without close on context done
	guarded      bool // not rewritten: a listener checks at function entries (extismhost.WithEntryGuard)
}

func (c *compiled) close(ctx context.Context) error { return c.rt.Close(ctx) }

// initEngine sets the level get_log_level reports: the lowest the logger
// records.
func (rt *Runtime) initEngine() { rt.guestLevel = extismhost.LogLevel(rt.log.GetLevel()) }

// compile compiles wasm with its data segments coalesced (internal/wasmrewrite) and
// instrumented (internal/wasmrewrite): loops and function entries count down to a
// context check, with WithCloseOnContextDone off; or, under
// RuntimeOptions.CloseOnContextDone, function entries only, with wazero
// checking loops. A module the rewriter refuses runs as it is, guarded by
// wazero at loops and by a listener at function entries (extismhost.WithEntryGuard).
func (rt *Runtime) compile(ctx context.Context, wasm []byte) (*compiled, error) {
	wasm = wasmrewrite.CoalesceData(wasm)
	cfg, compileCtx := rt.fastCfg, ctx
	instrumented, guarded := rt.instrument, false
	if !rt.instrument {
		cfg = rt.cfg
	}
	if out, err := wasmrewrite.Instrument(wasm, rt.instrument); err == nil {
		wasm = out
	} else {
		rt.log.Debug("guest not instrumented; running it guarded by wazero at every loop and function entry, slower", "error", err)
		cfg, compileCtx, instrumented, guarded = rt.guardCfg, extismhost.WithEntryGuard(ctx), false, true
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	fail := func(err error) (*compiled, error) {
		_ = r.Close(ctx)
		return nil, err
	}
	if err := extismhost.Instantiate(ctx, r); err != nil {
		return fail(err)
	}
	cm, err := r.CompileModule(compileCtx, wasm)
	if err != nil {
		return fail(err)
	}
	return &compiled{rt: r, cm: cm, instrumented: instrumented, guarded: guarded}, nil
}

type instance struct {
	mod    api.Module
	k      *extismhost.Kernel
	lim    *memLimiter
	stderr *guestOutput

	usedAt time.Time               // when it was made or last returned to the pool
	funcs  map[string]api.Function // exports called so far
	init   []api.Function          // the guest runtime's initialisation, run before the first call
	inited bool
	stack  [1]uint64
}

func (in *instance) close() {
	_ = in.mod.Close(context.Background())
}

// fusesBuiltins: this engine can run a group of built-ins on one pool,
// switching the kernel's environment per call (fused.go).
const fusesBuiltins = true

// useEnv makes the instance's host functions read env from its next call.
func (in *instance) useEnv(env *extismhost.Env) { in.k.SetEnv(env) }

func (in *instance) exports() map[string]bool {
	m := map[string]bool{}
	for name := range in.mod.ExportedFunctionDefinitions() {
		m[name] = true
	}
	return m
}

func (p *Plugin) instantiate(ctx context.Context, lim *memLimiter, stderr *guestOutput, mc wazero.ModuleConfig, files *rootfs.OpenFiles) (*instance, error) {
	k := extismhost.NewKernel(p.env, lim, files)
	// Start functions are not run at instantiation: the guest runtime is
	// initialised before the first call, under its timeout, as Extism does.
	// Instances are anonymous, so one runtime holds many.
	mc = mc.WithStartFunctions().WithName("").WithNanosleep(k.Nanosleep)
	ctx = experimental.WithMemoryAllocator(ctx, lim)
	ctx = extismhost.WithKernel(ctx, k)
	mod, err := p.mod.cm.rt.InstantiateModule(ctx, p.mod.cm.cm, mc)
	if err != nil {
		return nil, err
	}
	in := &instance{mod: mod, k: k, lim: lim, stderr: stderr, funcs: map[string]api.Function{}}
	in.init = guestInit(mod)
	return in, nil
}

// guestInit returns the functions that initialise the guest's language
// runtime, as Extism detects them: Haskell's hs_init (after a reactor's
// _initialize), else a WASI reactor's _initialize, else a command's
// __wasm_call_ctors.
func guestInit(mod api.Module) []api.Function {
	noParams := func(name string) api.Function {
		f := mod.ExportedFunction(name)
		if f == nil || len(f.Definition().ParamTypes()) != 0 {
			return nil
		}
		return f
	}
	if hs := mod.ExportedFunction("hs_init"); hs != nil {
		var fs []api.Function
		if f := mod.ExportedFunction("_initialize"); f != nil {
			fs = append(fs, f)
		}
		return append(fs, hs)
	}
	if f := noParams("_initialize"); f != nil {
		return []api.Function{f}
	}
	if f := noParams("__wasm_call_ctors"); f != nil {
		return []api.Function{f}
	}
	return nil
}

// invoke runs export with input. errMsg is the message the guest set with
// error_set; err is an engine error (trap, exit, timeout); exited reports a
// proc_exit(0), which succeeds but closes the module.
func (in *instance) invoke(ctx context.Context, export string, input []byte) (rc uint32, out []byte, errMsg string, exited bool, err error) {
	// Mark the call running before looking at the module: a module closed
	// from now on keeps its memory mapped until the call returns, and one
	// closed before is seen closed here (wazero marks it closed before it
	// frees its memory).
	in.lim.enter()
	defer in.lim.leave()
	if in.mod.IsClosed() {
		return 1, nil, "", false, errors.New("module is closed")
	}
	f := in.funcs[export]
	if f == nil {
		f = in.mod.ExportedFunction(export)
		if f == nil {
			return 1, nil, "", false, fmt.Errorf("unknown function: %s", export)
		}
		def := f.Definition()
		if n := len(def.ResultTypes()); n > 1 || len(def.ParamTypes()) > 0 {
			return 1, nil, "", false, fmt.Errorf("function %s has signature %v -> %v, expected () -> i32", export, def.ParamTypes(), def.ResultTypes())
		}
		in.funcs[export] = f
	}
	k := in.k
	ctx, err = k.Begin(ctx, input)
	if err != nil {
		return 1, nil, "", false, err
	}
	defer k.End()
	if !in.inited {
		for i, f := range in.init {
			if i == len(in.init)-1 && f.Definition().Name() == "hs_init" {
				_, err = f.Call(ctx, 0, 0)
			} else {
				_, err = f.Call(ctx)
			}
			if err != nil {
				return 1, nil, "", false, fmt.Errorf("failed to initialize runtime: %w", err)
			}
		}
		in.inited = true
	}
	in.stack[0] = 0
	err = f.CallWithStack(ctx, in.stack[:])
	if err != nil {
		var exit *sys.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 0 {
			return 1, nil, "", false, err
		}
		exited = true
		in.stack[0] = 0
	}
	rc = uint32(in.stack[0])
	if len(f.Definition().ResultTypes()) == 0 {
		rc = 0
	}
	return rc, k.Output(), k.ErrorMessage(), exited, nil
}
