package plugins

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/plugins/internal/extismhost"
	"github.com/mcphost-project/mcphost/plugins/internal/rootfs"
)

// Crash-loop policy: after CrashLimit consecutive crashes (traps, timeouts,
// exits, failed instantiations) a plugin is marked failed and fails fast for
// a backoff that starts at CrashBackoff and doubles up to MaxCrashBackoff.
// The first call after the backoff is let through; a success clears it.
// A tool call's crashes (not a failed instantiation) count against its
// caller instead (CallerKey): that caller alone backs off, by the same
// numbers, so that no caller can take a tool from the others.
const (
	CrashLimit      = 5
	CrashBackoff    = time.Second
	MaxCrashBackoff = time.Minute
)

// Plugin states, as reported by Status.
const (
	StateLoaded = "loaded"
	StateFailed = "failed" // crash looping: calls fail fast until the backoff ends
	StateClosed = "closed"
)

// Plugin is one loaded version of one Spec: a compiled module, its describe
// output, and a pool of warm instances. Call is safe for concurrent use; an
// instance never serves two calls at once.
type Plugin struct {
	rt    *Runtime
	spec  Spec
	src   source // wasm is dropped after load
	mod   *module
	desc  abi.Describe
	hooks map[string]bool
	// hookStats counts each hook's calls (hookstats.go); set at load,
	// never changed after.
	hookStats map[string]*hookCounters
	hints     *abi.Hints // the describe hints in effect; nil for none, or when the runtime ignores them
	memo      *memo      // answers the hints let the host reuse; nil for none
	export    []string   // sorted exported function names of the main module
	// tools and toolIndex are a tool plugin's tools (KindTools), asked at
	// load and fixed for the version.
	tools     []*Tool
	toolIndex map[string]*Tool
	log       hclog.Logger
	modCfg    wazero.ModuleConfig // without the grants, which each instance mounts afresh
	grants    rootfs.Grants       // allowed_paths, closed by Close

	env *extismhost.Env // what the host functions read: config, logger, allowed_hosts

	// pool, when set, is the pool of instances the plugin shares with the
	// other built-ins of its group (fused.go): get, put and discard go to
	// it, and sem only counts the plugin's own calls in flight.
	pool *Plugin

	sem  chan struct{}  // one token per instance slot
	idle chan *instance // warm instances
	done chan struct{}  // closed by Close

	// running holds the cancel functions of the calls in flight, so that
	// Close (once it gives up waiting) and the runtime's Halt stop their
	// guests at the next check; after that, halted refuses new calls. Both
	// under mu. A map and a lock, not context.AfterFunc per call, which
	// cost two allocations and a tenth of an empty call.
	running map[*instance]context.CancelFunc
	halted  bool

	mu     sync.Mutex // guards closed and pushes to idle; and the stats below
	closed bool
	stats  Status
	crashN int
	until  time.Time // fail fast until then
	wait   time.Duration
	// callers are the crash-loop states of tool calls' callers
	// (crashes.go), by CallerKey; at most maxCrashCallers.
	callers map[string]*callerCrashes

	refs atomic.Int64 // chains sharing this plugin
}

// Status is a snapshot of a plugin's health.
type Status struct {
	Name               string   `json:"name"`
	Source             string   `json:"source"`
	SHA256             string   `json:"sha256"`
	ABI                string   `json:"abi"`
	Version            string   `json:"version,omitempty"`
	Hooks              []string `json:"hooks"`
	Kind               string   `json:"kind,omitempty"`  // KindTools for a tool plugin
	Tools              []string `json:"tools,omitempty"` // a tool plugin's tools, unprefixed
	State              string   `json:"state"`           // StateLoaded, StateFailed or StateClosed
	Calls              uint64   `json:"calls"`
	Reused             uint64   `json:"reused"`   // hook calls answered from the plugin's hints, without running it
	Failures           uint64   `json:"failures"` // calls that returned an error, of any kind
	Crashes            uint64   `json:"crashes"`  // instances thrown away (trap, timeout, exit)
	ConsecutiveCrashes int      `json:"consecutiveCrashes"`
	// IdleInstances are warm instances waiting for a call (for a plugin
	// of a group of built-ins, the group's, which all its plugins share:
	// fused.go); BusyInstances the slots taken by the plugin's calls
	// (running, or making their instance).
	IdleInstances int       `json:"idleInstances"`
	BusyInstances int       `json:"busyInstances"`
	LastError     string    `json:"lastError,omitempty"`
	LastErrorAt   time.Time `json:"lastErrorAt,omitzero"`
	RetryAt       time.Time `json:"retryAt,omitzero"` // when failed: when calls are let through again
	// BackedOffCallers are the callers whose own tool calls crashed
	// CrashLimit times in a row and who are in their own backoff; the
	// plugin serves the others.
	BackedOffCallers int `json:"backedOffCallers,omitempty"`
	// Load numbers this load of the plugin, runtime-wide: a reload that
	// keeps the plugin (same digest, spec and config) keeps the number,
	// one that loads it afresh gives a new one. It is how a test or an
	// operator tells which plugins a reload touched.
	Load uint64 `json:"load"`
}

// Load loads one plugin: resolves and verifies its source, compiles it (or
// reuses the runtime's compile of the same content), instantiates one
// instance to check its exports and describe output, and warms its pool.
// Errors are *LoadError wrapping the cause's sentinel.
func (rt *Runtime) Load(ctx context.Context, spec Spec) (*Plugin, error) {
	spec = spec.WithDefaults()
	p, err := rt.load(ctx, spec)
	if err != nil {
		return nil, &LoadError{Name: spec.Name, Source: spec.Source, Err: err}
	}
	return p, nil
}

func (rt *Runtime) load(ctx context.Context, spec Spec) (*Plugin, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	src, err := rt.resolve(spec)
	if err != nil {
		return nil, err
	}
	return rt.loadSource(ctx, spec, src)
}

func (rt *Runtime) loadSource(ctx context.Context, spec Spec, src source) (*Plugin, error) {
	return rt.loadSourceIn(ctx, spec, src, nil)
}

// loadSourceIn is loadSource for a plugin whose instances come from pool,
// when not nil (fused.go).
func (rt *Runtime) loadSourceIn(ctx context.Context, spec Spec, src source, pool *Plugin) (*Plugin, error) {
	// Grants first: a bad one is refused before any compiling.
	httpGate, err := extismhost.NewHTTP(spec.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSpec, spec.Name, err)
	}
	var gs rootfs.Grants
	if len(spec.AllowedPaths) > 0 {
		// Grants are os.Root-confined (internal/rootfs), not wazero's
		// DirFS, which follows symlinks out of the directory.
		if gs, err = rootfs.Open(spec.AllowedPaths); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInstantiate, err)
		}
	}
	mod, err := rt.acquire(ctx, src.wasm, src.sha)
	if err != nil {
		gs.Close()
		return nil, err
	}
	src.wasm = nil
	log := rt.log.Named(spec.Name)
	p := &Plugin{
		rt:   rt,
		spec: spec,
		src:  src,
		mod:  mod,
		log:  log,
		env: &extismhost.Env{Config: src.config, Log: log, LogLevel: rt.guestLevel, HTTP: httpGate,
			Progress: spec.Progress, ClientLog: spec.ClientLog},
		grants: gs,
		pool:   pool,
		sem:    make(chan struct{}, spec.Instances),
		idle:   make(chan *instance, spec.Instances),
		done:   make(chan struct{}),
	}
	if spec.KV {
		p.env.KV = pluginKV{store: rt.kvStore(), plugin: spec.Name}
	}
	p.refs.Store(1)
	mc := defaultModuleConfig()
	for k, v := range spec.Env {
		mc = mc.WithEnv(k, v)
	}
	p.modCfg = mc

	var first *instance // nil once gone
	fail := func(err error) (*Plugin, error) {
		switch {
		case pool == nil && first != nil:
			first.close()
		case pool != nil && first != nil:
			pool.put(first)
		case pool != nil:
			pool.discard()
		}
		p.closeRoots()
		rt.release(mod)
		return nil, err
	}
	if pool != nil {
		if first, err = pool.get(ctx); err != nil {
			first = nil
			pool = nil // no slot of the pool taken
			return fail(err)
		}
	} else if first, err = p.newInstance(ctx); err != nil {
		return fail(err)
	}
	exports := first.exports()
	for name := range exports {
		p.export = append(p.export, name)
	}
	sort.Strings(p.export)
	if _, ok := exports[abi.ExportDescribe]; !ok {
		return fail(fmt.Errorf("%w: %s is not exported", ErrMissingExport, abi.ExportDescribe))
	}
	out, keep, err := p.callInstance(ctx, first, "describe", abi.ExportDescribe, nil)
	if err != nil {
		if !keep {
			first = nil // the call threw it away
		}
		var te *TrapError
		if errors.As(err, &te) && te.Stderr != "" {
			err = fmt.Errorf("%w; stderr: %s", err, te.Stderr)
		}
		if keyErr := p.misspeltKey(ctx); keyErr != nil {
			err = fmt.Errorf("%w (describe failed: %v)", keyErr, err)
		}
		return fail(commandHint(err, exports))
	}
	desc, err := decodeDescribe(out, func(name string) bool { _, ok := exports[name]; return ok })
	if err != nil {
		return fail(err)
	}
	for _, w := range desc.warnings {
		log.Warn(w)
	}
	if err := checkConfigKeys(spec.Config, desc.ConfigKeys); err != nil {
		return fail(err)
	}
	p.desc = desc.Describe
	if desc.Hints != nil && !rt.ignoreHints {
		p.hints = desc.Hints
		p.memo = newMemo(*desc.Hints)
	}
	p.hooks = map[string]bool{}
	for _, h := range desc.Hooks {
		p.hooks[h] = true
	}
	if spec.Kind == KindTools {
		keep, err := p.loadTools(ctx, first, exports)
		if !keep {
			first = nil
		}
		if err != nil {
			return fail(err)
		}
	}
	counted := p.hooks
	if spec.Kind == KindTools {
		counted = maps.Clone(p.hooks)
		counted[HookToolInvoke] = true
	}
	p.hookStats = newHookCounters(counted)
	p.stats = Status{Name: spec.Name, Source: spec.Source, SHA256: src.sha, ABI: desc.ABI,
		Version: desc.Version, Hooks: desc.Hooks, State: StateLoaded, Load: rt.loads.Add(1), Kind: spec.Kind}
	for _, t := range p.tools {
		p.stats.Tools = append(p.stats.Tools, t.Def.Name)
	}

	// The instance that described stays warm. The pool grows on demand up
	// to spec.Instances: each warm Go instance holds 3 to 6 MB of linear
	// memory, and most plugins of a chain never see two calls at once. It
	// shrinks when idle (Runtime.sweepIdle).
	if pool != nil {
		pool.put(first)
	} else {
		p.idle <- first
	}
	if !rt.register(p) {
		_ = p.Close(ctx)
		return nil, fmt.Errorf("%w: the runtime was halted", ErrClosed)
	}
	log.Debug("loaded", "version", desc.Version, "hooks", desc.Hooks, "sha256", src.sha, "max_instances", spec.Instances)
	return p, nil
}

// defaultModuleConfig grants clocks and randomness, nothing else: no
// filesystem, environment, arguments or network.
func defaultModuleConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader)
}

// newInstance instantiates the module with the plugin's grants and caps.
func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	lim := &memLimiter{limit: p.spec.Memory}
	stderr := &guestOutput{log: p.log, level: hclog.Warn, stream: "stderr"}
	stdout := &guestOutput{log: p.log, level: hclog.Info, stream: "stdout"}
	mc := p.modCfg.WithStderr(stderr).WithStdout(stdout)
	files := &rootfs.OpenFiles{}
	if len(p.grants) > 0 {
		mc = mc.WithFSConfig(p.grants.FSConfig(files))
	}
	in, err := p.instantiate(ctx, lim, stderr, mc, files)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInstantiate, err)
	}
	if lim.tooBig.Load() {
		in.close()
		return nil, fmt.Errorf("%w: the module's initial memory exceeds the cap of %d bytes", ErrInstantiate, p.spec.Memory)
	}
	in.usedAt = time.Now() // a new instance counts as used: the sweep spares it a while
	return in, nil
}

// newWarmInstance instantiates and runs the guest's initialisation (by
// calling describe), so the first hook call pays nothing extra.
func (p *Plugin) newWarmInstance(ctx context.Context) (*instance, error) {
	in, err := p.newInstance(ctx)
	if err != nil {
		return nil, err
	}
	if _, keep, err := p.callInstance(ctx, in, "describe", abi.ExportDescribe, nil); err != nil {
		if keep {
			in.close()
		}
		return nil, err
	}
	return in, nil
}

// Name returns the spec's name.
func (p *Plugin) Name() string { return p.spec.Name }

// Spec returns the plugin's spec with defaults applied.
func (p *Plugin) Spec() Spec { return p.spec }

// Describe returns the plugin's describe output.
func (p *Plugin) Describe() abi.Describe { return p.desc }

// SHA256 returns the hex digest of the plugin's module.
func (p *Plugin) SHA256() string { return p.src.sha }

// Exports returns the names of the functions the module exports, sorted.
func (p *Plugin) Exports() []string { return append([]string(nil), p.export...) }

// HasHook reports whether the plugin implements hook.
func (p *Plugin) HasHook(hook string) bool { return p.hooks[hook] }

// InScope reports whether the plugin sees tools of server.
func (p *Plugin) InScope(server string) bool {
	if len(p.spec.Servers) == 0 {
		return true
	}
	for _, s := range p.spec.Servers {
		if s == server {
			return true
		}
	}
	return false
}

// ForCaller reports whether the plugin runs for caller (Spec.Callers and
// Spec.Groups).
func (p *Plugin) ForCaller(caller *abi.Caller) bool {
	if len(p.spec.Callers) == 0 && len(p.spec.Groups) == 0 {
		return true
	}
	if caller.Subject != "" && slices.Contains(p.spec.Callers, caller.Subject) {
		return true
	}
	for _, g := range p.spec.Groups {
		if caller.InGroup(g) {
			return true
		}
	}
	return false
}

// Status returns a snapshot of the plugin's health.
func (p *Plugin) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Hooks = append([]string(nil), s.Hooks...)
	s.Tools = slices.Clone(s.Tools)
	s.ConsecutiveCrashes = p.crashN
	s.BackedOffCallers = p.backedOffLocked(time.Now())
	s.IdleInstances, s.BusyInstances = len(p.idle), len(p.sem)
	if p.pool != nil {
		s.IdleInstances = len(p.pool.idle) // shared with its group
	}
	switch {
	case p.closed:
		s.State = StateClosed
	case !p.until.IsZero():
		s.State = StateFailed
		s.RetryAt = p.until
	default:
		s.State = StateLoaded
	}
	return s
}

// Call runs one hook with input under the spec's timeout and returns the
// guest's output, unchecked. Errors: ErrNoHook, ErrTimeout, *TrapError
// (ErrTrap, ErrMemoryLimit), *PluginError, ErrOutputTooLarge,
// ErrUnavailable while crash looping, ErrClosed, or the context's error.
func (p *Plugin) Call(ctx context.Context, hook string, input []byte) ([]byte, error) {
	export, ok := abi.ExportForHook(hook)
	if !ok || !p.hooks[hook] {
		return nil, fmt.Errorf("%w: %s: %q", ErrNoHook, p.spec.Name, hook)
	}
	start := time.Now()
	out, err := p.call(ctx, nil, hook, export, input)
	p.recordHook(hook, time.Since(start), err)
	p.record(err, true, nil)
	return out, err
}

// call runs export on an instance. who, when not nil, is the CallerKey
// whose own backoff applies.
func (p *Plugin) call(ctx context.Context, who *string, hook, export string, input []byte) ([]byte, error) {
	if err := context.Cause(ctx); err != nil {
		// Do not spend an instance on a call nobody waits for.
		return nil, fmt.Errorf("plugins: %s: %s: %w", p.spec.Name, hook, err)
	}
	if err := p.gate(who); err != nil {
		return nil, err
	}
	in, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	out, keep, err := p.callInstance(ctx, in, hook, export, input)
	if keep {
		p.put(in)
	} else {
		p.discard()
	}
	return out, err
}

// callInstance runs export on in. keep is false when the instance must be
// thrown away (it has then been closed).
func (p *Plugin) callInstance(ctx context.Context, in *instance, hook, export string, input []byte) (out []byte, keep bool, err error) {
	timeout := p.spec.Timeout
	if hook == abi.HookToolsList || hook == abi.HookList || export == abi.ExportDescribe {
		timeout = p.spec.ListTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Close and the runtime's Halt stop the guest too.
	if !p.track(in, cancel) {
		cancel()
	}
	defer p.untrack(in)
	if p.pool != nil {
		in.useEnv(p.env) // the instance is the group's: read this plugin's config
	}
	in.lim.refused.Store(false)
	in.stderr.reset()
	rc, out, errMsg, exited, err := in.invoke(cctx, export, input)
	if (err != nil || exited) && ctx.Err() == nil && p.isHalted() {
		// Stopped by Close or Halt. Closing the runtime closes the module
		// with exit code 0, which must not read as the guest's own
		// proc_exit(0), a success.
		in.close()
		return nil, false, fmt.Errorf("%w: plugin %s: %s stopped: the plugin was closed while it ran", ErrClosed, p.spec.Name, hook)
	}
	if err != nil {
		var exit *sys.ExitError
		if errors.As(err, &exit) {
			in.close()
			switch code := exit.ExitCode(); {
			case code == sys.ExitCodeDeadlineExceeded && ctx.Err() == nil:
				return nil, false, fmt.Errorf("%w: %s: %s after %v", ErrTimeout, p.spec.Name, hook, timeout)
			case code == sys.ExitCodeContextCanceled || code == sys.ExitCodeDeadlineExceeded:
				return nil, false, fmt.Errorf("plugins: %s: %s: %w", p.spec.Name, hook, context.Cause(ctx))
			default:
				return nil, false, &TrapError{Plugin: p.spec.Name, Hook: hook, ExitCode: code,
					Memory: in.lim.refused.Load(), Stderr: in.stderr.takeTail(), Err: err}
			}
		}
		in.close()
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, false, fmt.Errorf("%w: %s: %s after %v", ErrTimeout, p.spec.Name, hook, timeout)
		}
		return nil, false, &TrapError{Plugin: p.spec.Name, Hook: hook, Memory: in.lim.refused.Load(),
			Stderr: in.stderr.takeTail(), Err: err}
	}
	if exited {
		// The guest called proc_exit(0): its module is closed, but the
		// call succeeded.
		in.close()
		if errMsg != "" || rc != 0 {
			return nil, false, &PluginError{Plugin: p.spec.Name, Hook: hook, Code: rc, Message: errMsg}
		}
		if len(out) > p.spec.MaxOutputBytes {
			return nil, false, fmt.Errorf("%w: %s: %s returned %d bytes, the limit is %d", ErrOutputTooLarge,
				p.spec.Name, hook, len(out), p.spec.MaxOutputBytes)
		}
		return out, false, nil
	}
	if errMsg != "" {
		return nil, true, &PluginError{Plugin: p.spec.Name, Hook: hook, Code: rc, Message: errMsg}
	}
	if rc != 0 {
		return nil, true, &PluginError{Plugin: p.spec.Name, Hook: hook, Code: rc}
	}
	if len(out) > p.spec.MaxOutputBytes {
		// The kernel's memory now holds the output: free it with the instance.
		in.close()
		return nil, false, fmt.Errorf("%w: %s: %s returned %d bytes, the limit is %d", ErrOutputTooLarge,
			p.spec.Name, hook, len(out), p.spec.MaxOutputBytes)
	}
	return out, true, nil
}

// track records the cancel function of a call on in; false if the plugin
// is halted (the caller cancels).
func (p *Plugin) track(in *instance, cancel context.CancelFunc) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.halted {
		return false
	}
	if p.running == nil {
		p.running = make(map[*instance]context.CancelFunc, cap(p.sem))
	}
	p.running[in] = cancel
	return true
}

func (p *Plugin) untrack(in *instance) {
	p.mu.Lock()
	delete(p.running, in)
	p.mu.Unlock()
}

// halt stops the calls in flight (their guests stop at the next check and
// the calls fail with ErrClosed) and refuses new ones.
func (p *Plugin) halt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.halted = true
	for _, cancel := range p.running {
		cancel()
	}
}

func (p *Plugin) isHalted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.halted
}

// gate fails fast while the plugin, or the caller who (when not nil), is
// in its crash-loop backoff.
func (p *Plugin) gate(who *string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.halted {
		return fmt.Errorf("%w: plugin %s", ErrClosed, p.spec.Name)
	}
	if !p.until.IsZero() && time.Now().Before(p.until) {
		return fmt.Errorf("%w: %s until %s after %d consecutive crashes; last error: %s",
			ErrUnavailable, p.spec.Name, p.until.Format(time.RFC3339), p.crashN, p.stats.LastError)
	}
	if who != nil {
		return p.gateCallerLocked(*who, time.Now())
	}
	return nil
}

// get takes a warm instance, instantiating one if none is idle.
func (p *Plugin) get(ctx context.Context) (*instance, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("plugins: %s: waiting for an instance: %w", p.spec.Name, context.Cause(ctx))
	case <-p.done:
		return nil, fmt.Errorf("%w: plugin %s", ErrClosed, p.spec.Name)
	}
	if p.pool != nil {
		in, err := p.pool.get(ctx)
		if err != nil {
			<-p.sem
		}
		return in, err
	}
	select {
	case in := <-p.idle:
		return in, nil
	default:
	}
	in, err := p.newWarmInstance(ctx)
	if err != nil {
		<-p.sem
		if p.isHalted() {
			return nil, fmt.Errorf("%w: plugin %s: %w", ErrClosed, p.spec.Name, err)
		}
		return nil, err
	}
	return in, nil
}

// put returns an instance to the pool.
func (p *Plugin) put(in *instance) {
	if p.pool != nil {
		p.pool.put(in)
		<-p.sem
		return
	}
	in.usedAt = time.Now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		in.close()
	} else {
		select {
		case p.idle <- in:
			p.mu.Unlock()
		default:
			p.mu.Unlock()
			in.close()
		}
	}
	<-p.sem
}

// shrinkIdle closes the warm instances that last served a call before
// cutoff, which gives their linear memory back to the system at once
// (memory_linux.go). A call that comes meanwhile and finds no instance
// idle makes a new one, as when every instance is busy.
func (p *Plugin) shrinkIdle(cutoff time.Time) (closed int) {
	var keep []*instance
	for len(keep)+closed < cap(p.idle) {
		var in *instance
		select {
		case in = <-p.idle:
		default:
		}
		if in == nil {
			break
		}
		if in.usedAt.Before(cutoff) {
			in.close()
			closed++
		} else {
			keep = append(keep, in)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range keep {
		if p.closed {
			in.close()
			continue
		}
		select {
		case p.idle <- in:
		default:
			in.close()
		}
	}
	return closed
}

// discard gives up the slot of an instance that was thrown away, and warms a
// replacement in the background unless the plugin is crash looping.
func (p *Plugin) discard() {
	<-p.sem
	if p.pool != nil {
		p.pool.discard()
		return
	}
	go p.refill()
}

func (p *Plugin) refill() {
	select {
	case p.sem <- struct{}{}:
	default:
		return // every slot is busy; a caller will instantiate when needed
	}
	defer func() { <-p.sem }()
	if p.gate(nil) != nil || len(p.idle) > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second+p.spec.ListTimeout)
	defer cancel()
	in, err := p.newWarmInstance(ctx)
	if err != nil {
		p.record(err, false, nil)
		p.log.Warn("replacing an instance failed", "error", err)
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		in.close()
		return
	}
	select {
	case p.idle <- in:
		p.mu.Unlock()
	default:
		p.mu.Unlock()
		in.close()
	}
}

// isCrash reports errors that cost an instance.
func isCrash(err error) bool {
	return errors.Is(err, ErrTrap) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrInstantiate)
}

// reused counts a hook call the chain answered without the guest.
func (p *Plugin) reused() {
	p.mu.Lock()
	p.stats.Reused++
	p.mu.Unlock()
}

// record updates the statistics and the crash-loop state after a call
// (call true) or a background instantiation (call false). who, when not
// nil, is the caller a crash counts against (all but failed
// instantiations, which are the plugin's).
func (p *Plugin) record(err error, call bool, who *string) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return // the caller gave up; not the plugin's doing
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if call {
		p.stats.Calls++
	}
	switch {
	case err == nil:
		p.crashN, p.until, p.wait = 0, time.Time{}, 0
		if who != nil {
			p.callerOKLocked(*who, true)
		}
		return
	case errors.Is(err, ErrUnavailable) || errors.Is(err, ErrClosed):
		p.stats.Failures++
		return
	}
	p.noteLocked(err)
	if !isCrash(err) {
		// The instance worked: a plugin error or bad output is no crash.
		p.crashN = 0
		if who != nil {
			p.callerOKLocked(*who, false)
		}
		return
	}
	p.stats.Crashes++
	if who != nil && !errors.Is(err, ErrInstantiate) {
		p.callerCrashLocked(*who, err)
		return
	}
	p.crashN++
	if p.crashN >= CrashLimit {
		if p.wait == 0 {
			p.wait = CrashBackoff
		} else {
			p.wait = min(2*p.wait, MaxCrashBackoff)
		}
		p.until = time.Now().Add(p.wait)
		p.log.Error("plugin is crash looping; failing fast", "crashes", p.crashN, "retry_in", p.wait, "error", err)
	}
}

// noteFailure records a failure found by the caller, such as invalid output.
func (p *Plugin) noteFailure(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteLocked(err)
}

func (p *Plugin) noteLocked(err error) {
	p.stats.Failures++
	p.stats.LastError = err.Error()
	p.stats.LastErrorAt = time.Now()
}

// Close closes the plugin's instances once the calls in flight have
// finished and releases its compiled module. When ctx is done first, the
// calls still in flight are stopped (they fail with ErrClosed): Close
// never waits on a guest past ctx.
func (p *Plugin) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	// Wait for the calls in flight: take every slot.
	taken := 0
wait:
	for ; taken < cap(p.sem); taken++ {
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			break wait
		}
	}
	p.halt()
	p.rt.unregister(p)
	for {
		select {
		case in := <-p.idle:
			in.close()
			continue
		default:
		}
		break
	}
	for ; taken > 0; taken-- {
		<-p.sem
	}
	p.closeRoots()
	p.env.HTTP.Close()
	p.rt.release(p.mod)
	if p.pool != nil {
		_ = p.pool.releaseRef(ctx)
	}
	return nil
}

// closeRoots closes the directories of the plugin's filesystem grants.
func (p *Plugin) closeRoots() {
	p.grants.Close()
	p.grants = nil
}

// Release gives back a reference from Retain or Manager.Plugin; the last
// one closes the plugin once its calls in flight have finished.
func (p *Plugin) Release(ctx context.Context) error { return p.releaseRef(ctx) }

// retain and releaseRef share a plugin between chain generations.
func (p *Plugin) retain() bool {
	for {
		n := p.refs.Load()
		if n <= 0 {
			return false
		}
		if p.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (p *Plugin) releaseRef(ctx context.Context) error {
	if p.refs.Add(-1) == 0 {
		return p.Close(ctx)
	}
	return nil
}
