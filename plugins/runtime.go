package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/suggest"
	"github.com/mcphost-project/mcphost/plugins/internal/wasmrewrite"
)

// RuntimeOptions configures a Runtime. The zero value is usable.
type RuntimeOptions struct {
	// CacheDir holds wazero's on-disk compilation cache; "" means
	// os.UserCacheDir()/mcphost/wazero. If it cannot be created the cache
	// is kept in memory and a warning logged.
	CacheDir string
	// Logger receives the runtime's and the plugins' logs; nil discards them.
	Logger hclog.Logger
	// Builtin resolves "builtin:NAME" sources to a module and the config
	// that selects the policy inside it (merged under the user's config).
	// The module's bytes must not change once returned: the runtime hashes
	// a given slice once.
	Builtin func(name string) (wasm []byte, config map[string]string, ok bool)
	// BuiltinNames, if set, lists the names Builtin resolves, so that an
	// unknown one gets a suggestion.
	BuiltinNames []string
	// CloseOnContextDone runs every guest under wazero's
	// WithCloseOnContextDone, which checks for a done context at every loop
	// header, instead of instrumenting guests' loops to check every few
	// thousand iterations (internal/wasmrewrite); function entries are
	// instrumented either way, as wazero does not check them. Slower; kept
	// to compare. Modules the instrumentation does not understand run under
	// WithCloseOnContextDone anyway, with a check at every function entry
	// (extismhost.WithEntryGuard), as do all modules under the mcphost_extism engine.
	CloseOnContextDone bool
	// IgnoreHints calls every hook every time, as an ABI 1.0 host does,
	// whatever the plugins' describe hints allow (abi.Hints). For
	// comparison and for debugging a plugin suspected of breaking one.
	IgnoreHints bool
	// SeparateBuiltins gives every built-in plugin of a chain a pool of
	// instances of its own, as before groups (fused.go), instead of one
	// pool for the chain's built-ins. For comparison and tests.
	SeparateBuiltins bool
	// IdleTimeout is how long a warm instance may serve no call before it
	// is closed and its memory given back; the plugin's next call makes a
	// new one (a built-in: some 3 ms). Zero means DefaultIdleTimeout;
	// negative, never.
	IdleTimeout time.Duration
	// Interpreter runs guests under wazero's interpreter instead of its
	// optimizing compiler: no machine code, but hooks run several times
	// slower. For comparison (plugins BenchmarkBuiltinFootprint,
	// BenchmarkInstance, filters BenchmarkPolicies); docs/BENCHMARKS.md,
	// "Interpreter or compiler for the built-ins".
	Interpreter bool
}

// DefaultIdleTimeout is RuntimeOptions.IdleTimeout's default.
const DefaultIdleTimeout = time.Minute

// Runtime owns the engine configuration, the compilation cache and the
// compiled modules, shared by content: plugins whose .wasm has the same
// sha256 share one compile and one copy of machine code.
//
// A Runtime is safe for concurrent use. Close it after every Chain, Plugin
// and Manager made from it.
type Runtime struct {
	cfg   wazero.RuntimeConfig    // WithCloseOnContextDone(true), for modules with function entries instrumented
	cache wazero.CompilationCache // of cfg
	// guardCfg compiles modules the rewriter refuses, as they are, with
	// WithCloseOnContextDone(true) and a function listener (extismhost.WithEntryGuard). Its
	// cache is its own too: the listener is not in wazero's cache key.
	guardCfg   wazero.RuntimeConfig
	guardCache wazero.CompilationCache
	// fastCfg compiles instrumented modules, with WithCloseOnContextDone
	// off. It has a cache of its own: wazero's cache key ignores the
	// setting, so one byte sequence must never reach both.
	fastCfg     wazero.RuntimeConfig
	fastCache   wazero.CompilationCache
	instrument  bool // instrument loops; false: wazero checks loops (cfg)
	ignoreHints bool
	log         hclog.Logger
	builtin     func(string) ([]byte, map[string]string, bool)
	builtins    []string
	gen         atomic.Uint64
	loads       atomic.Uint64 // numbers plugin loads (Status.Load)
	// guestLevel is what get_log_level tells guests: the Extism level
	// (0 trace .. 4 error) of the lowest message the logger records.
	guestLevel int32
	// separateBuiltins is RuntimeOptions.SeparateBuiltins.
	separateBuiltins bool

	mu      sync.Mutex
	modules map[string]*module // by sha256
	closed  bool
	plugins map[*Plugin]struct{} // loaded and not closed, for Halt
	halted  bool                 // by Halt or Close: plugins are halted as they load

	// builtinSums remembers the digest of each builtin's bytes: hashing
	// the 5.6 MB built-in module for every built-in plugin of every reload
	// took 18 ms of CPU, which calls then queued behind.
	builtinSums sync.Map // name -> builtinSum

	kv atomic.Pointer[KVStore] // tool plugins' key-value stores (UseKV); a memory store until set

	stopSweep func() // ends sweepIdle and waits for it; nil when instances never expire
}

// UseKV makes store the key-value store of the tool plugins loaded from
// now on (Spec.KV); before it, they share one in memory.
func (rt *Runtime) UseKV(store KVStore) { rt.kv.Store(&store) }

func (rt *Runtime) kvStore() KVStore {
	for {
		if s := rt.kv.Load(); s != nil {
			return *s
		}
		var mem = NewMemoryKV(0)
		rt.kv.CompareAndSwap(nil, &mem)
	}
}

// builtinSum is the digest of one builtin's bytes. It keeps the bytes, so
// no other slice can be allocated at their address while it is cached.
type builtinSum struct {
	wasm []byte
	sha  string
}

// module is one compiled module, reference counted by the plugins using it.
type module struct {
	sha         string
	size        int
	ready       chan struct{} // closed when compiled (or failed)
	err         error
	cm          *compiled
	compileTime time.Duration
	refs        int // under Runtime.mu
}

// NewRuntime returns a Runtime. A timed-out or cancelled call stops the
// guest instead of the host: guests' loops and function entries are
// instrumented to check the context (internal/wasmrewrite), and guests the
// instrumentation does not understand run with wazero's
// WithCloseOnContextDone and a check at every function entry (extismhost.WithEntryGuard).
func NewRuntime(ctx context.Context, opts RuntimeOptions) (*Runtime, error) {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	dir := opts.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "mcphost", "wazero")
	}
	newCache := func(dir string) wazero.CompilationCache {
		var cache wazero.CompilationCache
		if err := os.MkdirAll(dir, 0o700); err == nil {
			cache, err = wazero.NewCompilationCacheWithDir(dir)
			if err != nil {
				log.Warn("compilation cache unavailable; compiling in memory", "dir", dir, "error", err)
			}
		} else {
			log.Warn("compilation cache directory unavailable; compiling in memory", "dir", dir, "error", err)
		}
		if cache == nil {
			cache = wazero.NewCompilationCache()
		}
		return cache
	}
	cache := newCache(dir)
	fastCache := newCache(filepath.Join(dir, "instrumented"))
	guardCache := newCache(filepath.Join(dir, "guarded"))
	newConfig := wazero.NewRuntimeConfig
	if opts.Interpreter {
		newConfig = wazero.NewRuntimeConfigInterpreter
	}
	rt := &Runtime{
		guardCfg:    newConfig().WithCompilationCache(guardCache).WithCloseOnContextDone(true),
		guardCache:  guardCache,
		cfg:         newConfig().WithCompilationCache(cache).WithCloseOnContextDone(true),
		cache:       cache,
		fastCfg:     newConfig().WithCompilationCache(fastCache).WithCloseOnContextDone(false),
		fastCache:   fastCache,
		instrument:  !opts.CloseOnContextDone,
		ignoreHints: opts.IgnoreHints,
		log:         log,
		builtin:     opts.Builtin,
		builtins:    opts.BuiltinNames,
		modules:     map[string]*module{},
	}
	rt.plugins = map[*Plugin]struct{}{}
	rt.separateBuiltins = opts.SeparateBuiltins
	rt.initEngine()
	idle := opts.IdleTimeout
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	if idle > 0 {
		stop, done := make(chan struct{}), make(chan struct{})
		go rt.sweepIdle(idle, stop, done)
		rt.stopSweep = sync.OnceFunc(func() { close(stop); <-done })
	}
	return rt, nil
}

// sweepIdle closes, every half of idle, the warm instances of every plugin
// that served no call for idle: a pool follows the load it sees, and a
// plugin its hints keep from being called (a built-in result policy, for
// results it would not change) holds no memory once its load instance
// has gone.
func (rt *Runtime) sweepIdle(idle time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(idle / 2)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			rt.mu.Lock()
			ps := make([]*Plugin, 0, len(rt.plugins))
			for p := range rt.plugins {
				ps = append(ps, p)
			}
			rt.mu.Unlock()
			for _, p := range ps {
				if n := p.shrinkIdle(now.Add(-idle)); n > 0 {
					p.log.Debug("closed idle instances", "closed", n, "idle_for", idle)
				}
			}
		}
	}
}

// Halt stops every guest call in flight, of every plugin of the runtime,
// at its next check (within microseconds, or a host import's own bound):
// the calls fail with ErrClosed and their instances are thrown away.
// Calls made after Halt fail at once. For shutdown, so that it never waits
// on a guest.
func (rt *Runtime) Halt() {
	rt.mu.Lock()
	rt.halted = true
	ps := make([]*Plugin, 0, len(rt.plugins))
	for p := range rt.plugins {
		ps = append(ps, p)
	}
	rt.mu.Unlock()
	for _, p := range ps {
		p.halt()
	}
}

// register adds a loaded plugin for Halt; false when the runtime is halted.
func (rt *Runtime) register(p *Plugin) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.halted {
		return false
	}
	rt.plugins[p] = struct{}{}
	return true
}

func (rt *Runtime) unregister(p *Plugin) {
	rt.mu.Lock()
	delete(rt.plugins, p)
	rt.mu.Unlock()
}

// Close halts the guest calls still in flight (Halt) and releases the
// compilation cache and every compiled module still held.
func (rt *Runtime) Close(ctx context.Context) error {
	if rt.stopSweep != nil {
		rt.stopSweep()
	}
	rt.Halt()
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	mods := rt.modules
	rt.modules = map[string]*module{}
	rt.mu.Unlock()
	var errs []error
	for _, m := range mods {
		<-m.ready
		if m.cm != nil {
			errs = append(errs, m.cm.close(ctx))
		}
	}
	errs = append(errs, rt.cache.Close(ctx), rt.fastCache.Close(ctx), rt.guardCache.Close(ctx))
	return errors.Join(errs...)
}

// nextGeneration numbers chains; it only grows.
func (rt *Runtime) nextGeneration() uint64 { return rt.gen.Add(1) }

// source is a resolved plugin source.
type source struct {
	wasm   []byte
	sha    string
	config map[string]string // builtin config merged under the spec's
	path   string            // absolute file path, "" for builtins
}

// resolve reads a spec's module and checks its digest.
func (rt *Runtime) resolve(spec Spec) (source, error) {
	var src source
	if name, ok := strings.CutPrefix(spec.Source, BuiltinPrefix); ok {
		if rt.builtin == nil {
			return src, fmt.Errorf("%w: no builtin plugins are available (asked for %q)", ErrSource, name)
		}
		wasm, bcfg, ok := rt.builtin(name)
		if !ok {
			known := ""
			if len(rt.builtins) > 0 {
				known = " (built-ins: " + strings.Join(rt.builtins, ", ") + ")"
			}
			return src, fmt.Errorf("%w: unknown builtin %q.%s%s", ErrSource, name, suggest.DidYouMean(name, rt.builtins), known)
		}
		src.wasm = wasm
		src.config = make(map[string]string, len(bcfg)+len(spec.Config))
		for k, v := range bcfg {
			src.config[k] = v
		}
	} else {
		path, err := filepath.Abs(spec.Source)
		if err != nil {
			return src, fmt.Errorf("%w: %w", ErrSource, err)
		}
		wasm, err := os.ReadFile(path)
		if err != nil {
			return src, fmt.Errorf("%w: %w", ErrSource, err)
		}
		if err := CheckHeader(wasm); err != nil {
			return src, err
		}
		src.wasm, src.path = wasm, path
		src.config = make(map[string]string, len(spec.Config))
	}
	for k, v := range spec.Config {
		src.config[k] = v
	}
	src.config[abi.ConfigABI] = abi.Version // the host's, set last: not the operator's to change
	src.sha = rt.digest(spec.Source, src.path == "", src.wasm)
	if spec.SHA256 != "" && !strings.EqualFold(spec.SHA256, src.sha) {
		return src, fmt.Errorf("%w: want %s, have %s", ErrChecksum, strings.ToLower(spec.SHA256), src.sha)
	}
	return src, nil
}

// digest returns the hex sha256 of wasm, reusing the last digest of a
// builtin when the resolver returned the very same bytes (same address and
// length) again.
func (rt *Runtime) digest(source string, builtin bool, wasm []byte) string {
	if builtin {
		if v, ok := rt.builtinSums.Load(source); ok {
			if b := v.(builtinSum); len(b.wasm) == len(wasm) && unsafe.SliceData(b.wasm) == unsafe.SliceData(wasm) {
				return b.sha
			}
		}
	}
	sum := sha256.Sum256(wasm)
	sha := hex.EncodeToString(sum[:])
	if builtin {
		rt.builtinSums.Store(source, builtinSum{wasm: wasm, sha: sha})
	}
	return sha
}

// acquire returns the compiled module for wasm, compiling it once however
// many plugins ask at the same time. Pair with release.
func (rt *Runtime) acquire(ctx context.Context, wasm []byte, sha string) (*module, error) {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, ErrClosed
	}
	if m := rt.modules[sha]; m != nil {
		m.refs++
		rt.mu.Unlock()
		select {
		case <-m.ready:
		case <-ctx.Done():
			rt.release(m)
			return nil, ctx.Err()
		}
		if m.err != nil {
			rt.release(m)
			return nil, m.err
		}
		return m, nil
	}
	m := &module{sha: sha, size: len(wasm), ready: make(chan struct{}), refs: 1}
	rt.modules[sha] = m
	rt.mu.Unlock()

	start := time.Now()
	// Bound what the module may allocate before wazero reads it, and cap
	// its tables (internal/wasmrewrite).
	src := wasm
	wasm, err := wasmrewrite.Check(wasm)
	var cm *compiled
	if err == nil {
		cm, err = rt.compile(ctx, wasm)
	}
	// wazero keeps copies of what it needs: an embedded module's pages
	// can go (evict).
	evict(src)
	m.compileTime = time.Since(start)
	if err != nil {
		m.err = fmt.Errorf("%w: %w", ErrCompile, err)
		rt.mu.Lock()
		if rt.modules[m.sha] == m {
			delete(rt.modules, m.sha)
		}
		rt.mu.Unlock()
		close(m.ready)
		return nil, m.err
	}
	m.cm = cm
	close(m.ready)
	rt.log.Debug("compiled module", "sha256", sha, "bytes", len(wasm), "took", m.compileTime)
	return m, nil
}

// release drops one reference; the last one closes the compiled module.
func (rt *Runtime) release(m *module) {
	rt.mu.Lock()
	m.refs--
	last := m.refs == 0 && rt.modules[m.sha] == m
	if last {
		delete(rt.modules, m.sha)
	}
	rt.mu.Unlock()
	if last && m.cm != nil {
		if err := m.cm.close(context.Background()); err != nil {
			rt.log.Warn("closing compiled module", "sha256", m.sha, "error", err)
		}
	}
}

// Modules returns how many distinct compiled modules the runtime holds.
func (rt *Runtime) Modules() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.modules)
}
