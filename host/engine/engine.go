// Package engine runs what `mcphost run` runs, from Go: the upstreams of a
// configuration behind a host, and its plugins as the host's policy, with
// reloads and a clean close. The CLI is a thin caller of it; a platform
// embeds the same thing, from the HCL file (host/config) or from a
// config.File built in Go.
//
//	file, diags := config.Load("mcphost.hcl")
//	if diags.HasErrors() { ... }
//	e, err := engine.Start(ctx, file, nil)
//	if err != nil { ... }
//	defer e.Close()
//	res, err := e.Host().CallTool(ctx, caller, "clock__current_time", args)
//
// Serve it with e.Host().ListenAndServe or ServeStdio, or mount
// e.Host().Handler() in a server of your own.
package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/grants"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/metrics"
	"github.com/mcphost-project/mcphost/host/pins"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/host/telemetry"
	"github.com/mcphost-project/mcphost/host/toolplugin"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/host/usersecrets"
	"github.com/mcphost-project/mcphost/internal/version"
	"github.com/mcphost-project/mcphost/plugins"
)

// Options tunes an Engine; the zero value (or nil) is what `mcphost run`
// does, without watching files.
type Options struct {
	// Logger receives the host's and the plugins' logs; nil discards them.
	Logger hclog.Logger
	// WatchPlugins reloads the plugins when a plugin's .wasm file changes.
	// (The config file is the caller's to watch: call Reload.)
	WatchPlugins bool
	// Store, when not nil, keeps run-time servers instead of the store the
	// file's store block names; the caller closes it after the engine.
	Store *store.Store
	// WaitLogins makes calls to a server that needs an OAuth login wait for
	// it (a CLI command, with Announce showing the link) instead of failing
	// at once with the link (a gateway).
	WaitLogins bool
	Announce   func(server, url string)
	Logins     *upstream.Logins // where logins wait for their callback (host.Options.Logins)
	// StartWait bounds how long Start waits for the servers' first connect:
	// those still connecting then go on, and join the catalog when they are
	// ready (clients are told: list_changed). 0 waits for each, up to its
	// connect_timeout, as a command that runs once must.
	StartWait time.Duration
}

// Engine is a running host with its plugin runtime and policy chain. It is
// safe for concurrent use.
type Engine struct {
	log hclog.Logger
	// metrics is served at GET /metrics (host/metrics).
	metrics *metrics.Metrics
	// tracer exports traces (host/telemetry); nil without a traces block.
	tracer *telemetry.Tracer
	rt     *plugins.Runtime
	mgr    *plugins.Manager
	host   *gateway.Host

	// tmgr loads, watches and swaps the tool plugins (tools.go); each is
	// served by its toolServers entry, by name, under tmu.
	tmgr        *plugins.Manager
	tmu         sync.Mutex
	toolServers map[string]*toolplugin.Server

	mu   sync.Mutex // serialises Reload and Sync
	file *config.File

	// audit is the audit log (audit.go); nil without an audit block.
	// auditInStore says it keeps its lines in the store.
	audit        *audit.Log
	auditInStore bool

	// store keeps the servers added at run time (servers.go); nil without
	// one. storeRev is the revision the host last took them at.
	store     *store.Store
	ownsStore bool
	storeRev  int64
	// sharesWindows is set when quotas count their windows in the store
	// (quotaWindows); the poller then prunes the expired ones.
	sharesWindows bool
	stopPoll      context.CancelFunc
	polling       sync.WaitGroup

	// pins shares the builtin:pin plugins' pins through the store
	// (pins.go); nil unless the store has a key. pinMu orders the writes
	// to pin files of its merge and of approvals (ApprovePins).
	pins  *pins.Shared
	pinMu sync.Mutex

	// users are the store's users, whose keys every authenticator of
	// the host checks (users.go); nil without a store. usersRev is the
	// users revision they were read at.
	users    *auth.Users
	usersMu  sync.Mutex
	usersRev int64

	// secrets gives callers' sessions their secrets (callersecrets.go);
	// nil unless the store has a key. secretVersions are the stored
	// secrets' versions at secretsRev, the revision last read.
	secrets        *usersecrets.Keeper
	secretsMu      sync.Mutex
	secretsRev     int64
	secretVersions usersecrets.Versions
}

// ErrPluginLoad is returned by Reload and ReloadPlugins when a plugin of
// the configuration failed to load (the running ones stay); their other
// errors are the store's or the upstreams'.
var ErrPluginLoad = errors.New("plugins failed to load")

// ShutdownDrain bounds how long Close waits for plugin calls still in
// flight once the upstreams are closed; then the guests are stopped.
const ShutdownDrain = 2 * time.Second

// Start compiles and loads file's plugins, builds the host with them as its
// policy, and connects every upstream (waiting up to each one's connect
// timeout; one that fails keeps retrying in the background). On error
// everything started is closed again.
func Start(ctx context.Context, file *config.File, opts *Options) (_ *Engine, err error) {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	e := &Engine{log: log, file: file}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	e.rt, err = plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: file.Runtime.CacheDir, Logger: log.Named("plugins"),
		Builtin: filters.Builtin, BuiltinNames: filters.Names()})
	if err != nil {
		return nil, fmt.Errorf("starting the plugin runtime: %w", err)
	}
	e.mgr, err = plugins.NewManager(e.rt, &plugins.ManagerOptions{Watch: opts.WatchPlugins})
	if err != nil {
		return nil, fmt.Errorf("starting the plugin manager: %w", err)
	}
	start := time.Now()
	if err := e.mgr.Reload(ctx, file.Plugins); err != nil {
		return nil, fmt.Errorf("loading plugins: %w", err)
	}
	if len(file.Plugins) > 0 {
		log.Info("plugins loaded", "count", len(file.Plugins), "took", time.Since(start).Round(time.Millisecond))
		// Compiling, or reading compiled code from the cache, leaves tens
		// to hundreds of MB of garbage that the runtime would hand back to
		// the OS only over minutes. Hand it back now, off the start-up path.
		go debug.FreeOSMemory()
	}
	e.store = opts.Store
	if e.store == nil && file.Store != nil {
		e.store, err = store.Open(ctx, store.Options{Driver: file.Store.Driver, DSN: file.Store.DSN, Key: file.Store.Key, KVLimit: plugins.KVLimit})
		if err != nil {
			return nil, err
		}
		e.ownsStore = true
	}
	if e.store != nil {
		e.rt.UseKV(storeKV{e})
		e.users = &auth.Users{}
		if err := e.syncUsers(ctx, file); err != nil {
			return nil, fmt.Errorf("reading the store's users: %w", err)
		}
	}
	if e.store != nil && e.store.CanKeepSecrets() {
		// Before the host lists anything through the pin plugins.
		e.pins = pins.NewShared(e.store)
		if _, err := e.syncPinFiles(ctx, file); err != nil {
			e.log.Warn("the store's pins could not be taken; this replica keeps its pin files until it can", "error", err)
		}
	}
	e.tmgr, err = plugins.NewManager(e.rt, &plugins.ManagerOptions{Watch: opts.WatchPlugins, Logger: log.Named("plugins").Named("tools")})
	if err != nil {
		return nil, fmt.Errorf("starting the tool plugin manager: %w", err)
	}
	if err := e.tmgr.Reload(ctx, file.ToolPlugins); err != nil {
		return nil, fmt.Errorf("loading tool plugins: %w", err)
	}
	cfg, rev, err := e.merged(ctx, file)
	if err != nil {
		return nil, err
	}
	e.storeRev = rev
	var grantStore grants.Store
	switch {
	case file.Grants != nil && file.Grants.Store && e.store != nil:
		// Shared by the replicas on the store's database.
		if grantStore, err = e.store.Grants(); err != nil {
			return nil, err
		}
	case file.Grants != nil && file.Grants.File != "":
		if grantStore, err = grants.NewFile(file.Grants.File, file.Grants.Key); err != nil {
			return nil, err
		}
	}
	auditOpts, err := e.startAudit(file)
	if err != nil {
		return nil, err
	}
	if file.Traces != nil {
		if e.tracer, err = telemetry.New(*file.Traces, version.Version); err != nil {
			return nil, err
		}
		log.Info("tracing", "otlp_endpoint", file.Traces.Endpoint)
	}
	if e.secrets = e.newSecretKeeper(); e.secrets != nil {
		if err := e.syncCallerSecrets(ctx, false); err != nil {
			return nil, fmt.Errorf("reading the store's callers' secrets: %w", err)
		}
	}
	var roundKey []byte
	if e.store != nil {
		// The requestStates of calls in rounds open on every replica of
		// the store (host/sessionless).
		if roundKey, err = e.store.SharedKey(ctx, "round-state"); err != nil {
			return nil, err
		}
		// The tasks mcphost runs are kept there too, under ids that
		// verify on every replica (host/tasks, stored.go).
		if cfg.Tasks.Key, err = e.store.SharedKey(ctx, "task-ids"); err != nil {
			return nil, err
		}
		cfg.Tasks.Store = e.store
	}
	e.metrics = metrics.New()
	e.host, err = gateway.New(cfg, &gateway.Options{RoundStateKey: roundKey, Grants: grantStore, WaitLogins: opts.WaitLogins, Announce: opts.Announce, Logins: opts.Logins, Logger: log,
		Policy: e.mgr, PolicyStatus: func() any { return append(e.mgr.Status(), e.tmgr.Status()...) },
		Observer: e.metrics, Metrics: e.metrics.Handler(), Audit: auditOpts, Tracer: e.tracer, QuotaWindows: e.quotaWindows(file), Secrets: e.secrets})
	if err != nil {
		return nil, err
	}
	// The tools manager's listener reads e.host, so it is attached only now;
	// a swap its watcher made since the load above is caught up here
	// (Refresh of an unchanged version does nothing).
	e.tmgr.Attach(toolsListener{e})
	e.refreshTools(ctx)
	src := metrics.Sources{Upstreams: e.host.Statuses, Sessions: e.host.SessionCounts, Plugins: e.pluginMetrics,
		Hooks: e.hookMetrics, Swaps: e.mgr.Generation}
	if e.audit != nil {
		src.Audit = e.audit.Stats
	}
	e.metrics.Watch(src)
	// The manager tells the host of its swaps from now on: the host, built
	// on the generation just loaded, needs no word of it.
	e.mgr.Attach(policyEvents{e.host})
	if err := e.startServers(ctx, opts.StartWait); err != nil {
		return nil, err
	}
	if e.store != nil {
		poll := config.DefaultStorePoll
		if file.Store != nil && file.Store.Poll > 0 {
			poll = file.Store.Poll
		}
		e.startPolling(poll)
	}
	return e, nil
}

// startServers starts connecting every server and waits for them, for at
// most wait when it is set: a server that does not answer must not keep
// the others from being served.
func (e *Engine) startServers(ctx context.Context, wait time.Duration) error {
	if wait <= 0 {
		return e.host.Start(ctx)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := e.host.Start(wctx); err != nil && ctx.Err() != nil {
		return err
	}
	var still []string
	for _, st := range e.host.Statuses() {
		if st.State == upstream.StateConnecting {
			still = append(still, st.Name)
		}
	}
	if len(still) > 0 {
		e.log.Info("serving while servers still connect; their tools join the catalog when they are ready", "connecting", still)
	}
	return nil
}

// policyEvents passes a Manager's events to the host that serves it.
type policyEvents struct{ h *gateway.Host }

func (l policyEvents) BeforeSwap(ctx context.Context, next *plugins.Chain) {
	l.h.PrepareViews(ctx, next)
}
func (l policyEvents) Swapped()                { l.h.NotifyPolicyChanged() }
func (l policyEvents) WatchReloaded(err error) { l.h.NoteReload("plugin files", err) }

// Host is the running host: call tools, list them, serve it.
func (e *Engine) Host() *gateway.Host { return e.host }

// Plugins is the policy chain's manager: its status, its generations.
func (e *Engine) Plugins() *plugins.Manager { return e.mgr }

// File is the configuration the engine runs, as of the last Reload that
// took.
func (e *Engine) File() *config.File {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.file
}

// Reload moves the engine to file, whole or not at all: the new plugins are
// loaded first, then swapped in together with the new set of upstreams, so
// policies in both never lapse and no upstream is served under the other
// configuration's policies. Unchanged upstreams keep their sessions and
// calls in flight. On error the running configuration stays, and the host's
// status shows the failure until a reload succeeds.
func (e *Engine) Reload(ctx context.Context, file *config.File) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.reload(ctx, file)
	e.host.NoteReload("config", err)
	return err
}

func (e *Engine) reload(ctx context.Context, file *config.File) error {
	staged, err := e.mgr.Stage(ctx, file.Plugins)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPluginLoad, err)
	}
	// Tool plugins load next, whole or not at all; once they have, their
	// servers move to the new versions (calls in flight finish on the
	// old) before the host's server set changes.
	tstaged, err := e.tmgr.Stage(ctx, file.ToolPlugins)
	if err != nil {
		staged.Close()
		return fmt.Errorf("%w: %w", ErrPluginLoad, err)
	}
	tstaged.Commit()
	tstaged.Close() // Swapped: the tool servers refresh
	cfg, rev, err := e.merged(ctx, file)
	if err != nil {
		staged.Close()
		return err
	}
	err = e.host.Reconfigure(ctx, cfg, staged.Commit)
	staged.Close()
	if err != nil {
		return fmt.Errorf("reconfiguring upstreams: %w", err)
	}
	e.dropToolServers(file.ToolPlugins, false)
	e.storeRev = rev
	// Plugins whose files did not change keep their generation, but what
	// they read (a pin file an operator just approved) may have: listings
	// are recomputed and clients told, on every reload.
	e.host.NotifyPolicyChanged()
	e.noteRestartOnly(e.file, file)
	e.file = file
	if e.store != nil {
		// The file's subjects may have changed: a stored user whose
		// subject it now takes is refused, one it gave up comes back.
		if err := e.syncUsers(ctx, file); err != nil {
			e.log.Warn("the store's users could not be read after the reload; polling the store applies them", "error", err)
		}
	}
	return nil
}

// Halt stops every plugin call still running, whatever its timeout: for a
// shutdown that must not wait on a guest.
func (e *Engine) Halt() {
	if e.rt != nil {
		e.rt.Halt()
	}
}

// Close closes the upstreams (ending their processes), then waits up to
// ShutdownDrain for plugin calls in flight, then stops the guests.
func (e *Engine) Close() error {
	if e == nil {
		return nil
	}
	var errs []error
	if e.stopPoll != nil {
		e.stopPoll()
		e.polling.Wait()
	}
	if e.host != nil {
		errs = append(errs, e.host.Close())
	}
	// After the host (the last calls are in it), before the store (it
	// writes there).
	errs = append(errs, e.closeAudit())
	if e.tracer != nil {
		tctx, tcancel := context.WithTimeout(context.Background(), ShutdownDrain)
		errs = append(errs, e.tracer.Shutdown(tctx)) // the last spans go out
		tcancel()
	}
	if e.ownsStore && e.store != nil {
		errs = append(errs, e.store.Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownDrain)
	defer cancel()
	if e.mgr != nil {
		errs = append(errs, e.mgr.Close(ctx))
	}
	e.dropToolServers(nil, true)
	if e.tmgr != nil {
		errs = append(errs, e.tmgr.Close(ctx))
	}
	if e.rt != nil {
		errs = append(errs, e.rt.Close(ctx))
	}
	return errors.Join(errs...)
}

// sameListener reports whether a and b differ only in what a reload
// applies (auth).
// noteRestartOnly says, for each block a reload cannot apply that changed,
// that it waits for a restart and what keeps running meanwhile.
func (e *Engine) noteRestartOnly(old, next *config.File) {
	for _, b := range []struct {
		changed bool
		what    string
	}{
		{!sameListener(old.Host.Listen, next.Host.Listen), "the listen block changed (address, limits or TLS file paths; auth changes apply now); the running listener keeps those settings"},
		{!reflect.DeepEqual(old.Audit, next.Audit), "the audit block changed; the running audit log keeps its settings"},
		{!reflect.DeepEqual(old.Traces, next.Traces), "the traces block changed (added, removed or edited); the running tracer, or its absence, stays"},
		{!reflect.DeepEqual(old.Store, next.Store), "the store block changed; the running store stays (servers, grants and audit lines it holds are read from it)"},
		{!reflect.DeepEqual(old.Admin, next.Admin), "the admin block changed; the admin listener keeps its address and limits"},
		{!reflect.DeepEqual(old.Grants, next.Grants), "the grants block changed; logins keep their grants where they are"},
		{!reflect.DeepEqual(old.Runtime, next.Runtime), "the runtime block changed; the plugin runtime keeps its compile cache and settings"},
	} {
		if b.changed {
			e.log.Warn(b.what + " until mcphost restarts")
		}
	}
}

func sameListener(a, b listener.Config) bool {
	a.Auth, a.AuthToken, b.Auth, b.AuthToken = nil, "", nil, ""
	return reflect.DeepEqual(a, b)
}

// pluginMetrics is what the metrics read of the plugins.
func (e *Engine) pluginMetrics() []metrics.PluginStatus {
	st := append(e.mgr.Status(), e.tmgr.Status()...)
	out := make([]metrics.PluginStatus, len(st))
	for i, s := range st {
		out[i] = metrics.PluginStatus{Name: s.Name, Loaded: s.State == plugins.StateLoaded,
			Calls: s.Calls, Reused: s.Reused, Failures: s.Failures, Crashes: s.Crashes,
			IdleInstances: s.IdleInstances, BusyInstances: s.BusyInstances}
	}
	return out
}

// hookMetrics is what the metrics read of the plugins' hooks.
func (e *Engine) hookMetrics() []metrics.HookStatus {
	bounds := make([]float64, len(plugins.HookBuckets))
	for i, b := range plugins.HookBuckets {
		bounds[i] = b.Seconds()
	}
	st := append(e.mgr.HookStats(), e.tmgr.HookStats()...)
	out := make([]metrics.HookStatus, len(st))
	for i, s := range st {
		out[i] = metrics.HookStatus{Plugin: s.Plugin, Hook: s.Hook, Calls: s.Calls, Failures: s.Failures, Traps: s.Traps,
			Timeouts: s.Timeouts, Bounds: bounds, Buckets: s.Buckets, Sum: s.Sum.Seconds()}
	}
	return out
}

// Metrics returns the engine's metrics (served at GET /metrics), for an
// embedder that scrapes them elsewhere or adds its own.
func (e *Engine) Metrics() *metrics.Metrics { return e.metrics }
