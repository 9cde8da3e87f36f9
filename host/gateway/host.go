// Package host is mcphost's MCP engine: it connects to the configured
// upstream servers, names their tools into one catalog, routes calls, asks a
// Policy what each caller may see and do, and serves the result as one MCP
// server over streamable HTTP, SSE and stdio.
//
// Lifecycle: New validates a Config; Start connects every upstream
// concurrently; Tools and CallTool use the catalog; Close ends every
// upstream session and process. The CLI and embedders use the same API.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/grants"
	"github.com/mcphost-project/mcphost/host/internal/outbox"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/quota"
	"github.com/mcphost-project/mcphost/host/search"
	"github.com/mcphost-project/mcphost/host/sessionless"
	"github.com/mcphost-project/mcphost/host/tasks"
	"github.com/mcphost-project/mcphost/host/telemetry"
	"github.com/mcphost-project/mcphost/host/toolset"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/host/usersecrets"
)

// ErrUnknownTool is returned (wrapped) for a call to a name the caller cannot see.
var ErrUnknownTool = errors.New("unknown tool")

// Options are the optional parts of a Host; nil means all defaults.
type Options struct {
	Logger hclog.Logger // nil discards logs
	Policy Policy       // nil lets everything through
	// PolicyStatus, if set, reports the policy's own state (the plugins'
	// load state, calls, crashes, last errors) in GET /status.
	PolicyStatus func() any
	// NoShortcuts serves tools/list and tools/call only the go-sdk's typed
	// way: no cached listing written straight to HTTP clients (fastlist.go),
	// no result passed on as the upstream's bytes (rawcall.go). Clients get
	// the same answers, slower; it is there to tell a shortcut's fault from
	// the rest.
	NoShortcuts bool
	// Observer, if set, hears of every tools/call (package host/metrics is
	// one).
	Observer Observer
	// Audit, if set, writes an audit entry for every tools/call, with what
	// each plugin decided (package host/audit).
	Audit *AuditOptions
	// Metrics, if set, is served at GET /metrics, to the same callers as
	// /status.
	Metrics http.Handler
	// Tracer, if set, traces each downstream request, its policy hooks and
	// its upstream call (package host/telemetry); the host does not shut
	// it down.
	Tracer *telemetry.Tracer
	// Grants keeps the OAuth grants of servers that log in (oauth blocks
	// without a grant); nil keeps them in memory only, until Close.
	Grants grants.Store
	// WaitLogins makes a call to a server that needs an OAuth login wait,
	// until its context ends, for the login (whose link Announce is told)
	// instead of failing at once with the link: for one-shot commands.
	WaitLogins bool
	Announce   func(server, url string)
	// Logins, when set, is where logins wait for their callback (a command
	// that serves the callback itself); Handler serves it either way.
	// Those are not bound to who may complete them: their links are the
	// authorization server's, for the operator who ran the command. Unset,
	// the host's own logins link to its login page (loginpage.go).
	Logins *upstream.Logins
	// QuotaWindows, if set, shares the windows of quotas' calls with the
	// other replicas (a store they share); nil counts in memory alone.
	QuotaWindows quota.Windows
	// Secrets, if set, gives callers' upstream sessions their own secrets
	// (caller.secrets), and Handler serves its secret page.
	Secrets *usersecrets.Keeper
	// RoundStateKey seals the requestState of 2026-07-28 calls in rounds
	// (rounds.go): replicas given the same key (the store's, which
	// host/engine passes) take each other's; nil makes one for this host.
	RoundStateKey []byte
}

// Host is a running gateway. It is safe for concurrent use.
type Host struct {
	cfg          Config
	log          hclog.Logger
	oauth        *upstream.OAuthEnv // upstream OAuth logins (oauthcode.go)
	policyStatus func() any
	policy       Policy
	noShortcuts  bool
	observer     Observer
	audit        *AuditOptions        // nil: no audit log
	tracer       *telemetry.Tracer    // nil: no traces
	listings     audit.ListingChanges // what the audit log last heard of each caller's listing
	metrics      http.Handler
	secrets      *usersecrets.Keeper
	authn        atomic.Pointer[auth.Authenticator] // nil: the HTTP endpoint does not authenticate; replaced by Reconfigure
	owners       listener.SessionOwners             // which identity each HTTP session belongs to (identity.go)
	drain        drainState                         // SIGTERM's graceful drain (drain.go)

	upMu      sync.RWMutex                // guards upstreams, byName and cfg across Reconfigure
	upstreams []*upstream.Server          // config order
	byName    map[string]*upstream.Server // server name -> upstream

	catMu             sync.Mutex // serialises catalog rebuilds
	cat               atomic.Pointer[catalog.Catalog]
	catPrint          [32]byte
	featMu            sync.Mutex // serialises prompt and resource rebuilds
	feats             atomic.Pointer[catalog.Features]
	views             viewCache
	progressRoutes    progressRouter
	calls             callRegistry
	rounds            sessionless.Parked[*sessionless.Round] // tools/calls of 2026-07-28 clients waiting for answers (rounds.go)
	sessionlessReader sessionless.Reader                     // the 2026-07-28 shortcut's (sessionless.go)
	roundWorkers      sessionless.Workers                    // the goroutines of calls in rounds (rounds.go)
	roundHolds        sessionless.Holds                      // sessions of requests whose calls in rounds outlive them
	sessions          sessionTable
	fastSessions      fastListSessions
	elicitations      elicitationRoutes
	servers           serverSet
	toolsets          toolset.Endpoints // the toolsets' (toolsets.go)
	closeOnce         sync.Once
	closed            atomic.Bool
	namingLog         catalog.ConditionLog // tool naming problems, said once
	featuresLog       catalog.ConditionLog // prompt and resource problems, said once
	refusedLog        catalog.ConditionLog // kinds of server-to-client requests refused, said once
	lists             listCache            // answers of the list hook
	reloadMu          sync.Mutex
	reload            *ReloadStatus // the latest, for GET /status
	// quotas counts calls against Config.Quotas (quota.go); nil, and no
	// cost to a call, without any. Replaced by Reconfigure.
	quotas       atomic.Pointer[quota.Limiter]
	quotaWindows quota.Windows // Options.QuotaWindows
	quotaLogged  atomic.Int64  // when quotaShareFailed last logged, Unix nanoseconds

	// Search exposure (searchtools.go).
	index     search.Indexer                      // the catalog's
	searching atomic.Pointer[catalog.ToolsConfig] // Config.Tools under search exposure, else nil
	sendNext  atomic.Pointer[mcp.MethodHandler]   // the go-sdk's sending handler, to notify one session

	code codemode.Engines // code mode's scripts (codemode.go)

	tasks *tasks.Service // MCP tasks (tasks.go)
}

// New validates cfg and builds a host. It starts nothing: call Start.
func New(cfg Config, opts *Options) (*Host, error) {
	if opts == nil {
		opts = &Options{}
	}
	cfg = cfg.WithDefaults()
	err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if opts.Audit != nil && opts.Audit.Log == nil {
		return nil, errors.New("host: Options.Audit without a Log")
	}
	h := &Host{
		cfg:          cfg,
		log:          log,
		policy:       opts.Policy,
		policyStatus: opts.PolicyStatus,
		noShortcuts:  opts.NoShortcuts,
		observer:     opts.Observer,
		audit:        opts.Audit,
		tracer:       opts.Tracer,
		metrics:      opts.Metrics,
		quotaWindows: opts.QuotaWindows,
		secrets:      opts.Secrets,
		byName:       make(map[string]*upstream.Server, len(cfg.Servers)),
	}
	h.tasks = &tasks.Service{IDs: tasks.NewIDs(cfg.Tasks.Key), Runner: tasks.NewRunner(cfg.Tasks), Sessions: taskSessions{h}, Log: log.Named("tasks")}
	a, err := listener.NewAuthenticator(cfg.Listen, log.Named("auth"))
	if err != nil {
		return nil, err
	}
	h.authn.Store(a)
	key := opts.RoundStateKey
	if key == nil {
		key = make([]byte, sessionless.KeySize)
		_, _ = rand.Read(key)
	}
	h.rounds.Timeout = roundTimeout
	if h.rounds.States, err = sessionless.NewStates(key); err != nil {
		return nil, fmt.Errorf("host: Options.RoundStateKey: %w", err)
	}
	logins := opts.Logins
	if logins == nil {
		// Served by Handler, with the login page: bound to who may
		// complete each login (loginpage.go).
		logins = &upstream.Logins{Bound: true}
	}
	h.oauth = &upstream.OAuthEnv{Grants: opts.Grants, Logins: logins, Redirect: listener.DefaultRedirect(cfg.Listen), Wait: opts.WaitLogins, Announce: opts.Announce,
		Authn: h.authn.Load}
	h.quotas.Store(h.newLimiter(cfg.Quotas, nil))
	h.exposeTools(cfg.Tools)
	h.views.init()
	h.drain.init()
	h.progressRoutes.init()
	h.cat.Store(catalog.Build(0, cfg.Tools, nil))
	h.feats.Store(catalog.BuildFeatures(cfg.Tools, cfg.Resources, nil))
	for _, sc := range cfg.Servers {
		u := upstream.New(sc, log.Named(sc.Name), h)
		h.upstreams = append(h.upstreams, u)
		h.byName[sc.Name] = u
	}
	return h, nil
}

// Start connects every upstream concurrently and returns once each has
// connected or failed (each within its connect timeout) or ctx ends. A
// server that fails does not stop the others; it keeps retrying with
// backoff, and its Status says why it failed.
func (h *Host) Start(ctx context.Context) error {
	h.warmCode()
	ups := h.upstreamList()
	waits := make([]<-chan struct{}, len(ups))
	for i, u := range ups {
		waits[i] = u.Start()
	}
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Config returns the configuration the host runs with, defaults applied.
func (h *Host) Config() Config {
	h.upMu.RLock()
	defer h.upMu.RUnlock()
	return h.cfg
}

// Statuses reports every upstream's state, in config order.
func (h *Host) Statuses() []upstream.Status {
	ups := h.upstreamList()
	out := make([]upstream.Status, len(ups))
	for i, u := range ups {
		out[i] = u.Status()
	}
	return out
}

func (h *Host) upstreamList() []*upstream.Server {
	h.upMu.RLock()
	defer h.upMu.RUnlock()
	return h.upstreams
}

func (h *Host) upstreamNamed(name string) *upstream.Server {
	h.upMu.RLock()
	defer h.upMu.RUnlock()
	return h.byName[name]
}

// Tools returns the catalog as the caller sees it, after policies.
func (h *Host) Tools(ctx context.Context, caller abi.Caller) ([]abi.Tool, error) {
	v, err := h.view(ctx, caller)
	if err != nil {
		return nil, err
	}
	return v.tools, nil
}

// ToolsChanged rebuilds the catalog from every upstream's cached tools and,
// when what clients can see changed, tells them.
func (h *Host) ToolsChanged(string) {
	h.catMu.Lock()
	defer h.catMu.Unlock()
	h.upMu.RLock()
	ups, toolsCfg := h.upstreams, h.cfg.Tools
	h.upMu.RUnlock()
	sts := make([]catalog.ServerTools, len(ups))
	for i, u := range ups {
		sts[i] = catalog.ServerTools{Server: u.Config.Name, Tools: u.CachedTools(), OffersTasks: u.OffersTasks(), Executions: u.CachedExecutions()}
	}
	old := h.cat.Load()
	next := catalog.Build(old.Version+1, toolsCfg, sts)
	print := fingerprint(next.Tools)
	if print == h.catPrint && old.Version > 0 {
		return
	}
	h.catPrint = print
	h.cat.Store(next)
	catalog.LogProblems(&h.namingLog, h.log, "tool naming", next.Issues)
	h.log.Debug("catalog rebuilt", "version", next.Version, "tools", len(next.Tools))
	if co, ok := h.observer.(CatalogObserver); ok {
		co.CatalogChanged(next.Tools)
	}
	h.servers.toolsChanged()
}

func fingerprint(tools []abi.Tool) [32]byte {
	b, _ := json.Marshal(tools)
	return sha256.Sum256(b)
}

// NotifyPolicyChanged tells the host that its Policy's behaviour changed
// (a plugin was swapped): cached views are dropped and clients are sent
// notifications/tools/list_changed, and the prompts and resources ones
// where the gateway offers them.
func (h *Host) NotifyPolicyChanged() {
	var gen uint64
	if h.policy != nil {
		gen = h.policy.Generation()
	}
	h.views.clear(gen)
	h.lists.clear()
	h.servers.toolsChanged()
	// The list hook may now show other prompts and resources.
	caps := h.capabilities()
	if caps.Prompts != nil {
		h.servers.promptsChanged()
	}
	if caps.Resources != nil {
		h.servers.resourcesChanged()
	}
}

// Progress routes an upstream's progress notification to the downstream
// request it belongs to.
func (h *Host) Progress(_ context.Context, u *upstream.Server, p *mcp.ProgressNotificationParams) {
	t, ok := h.progressRoutes.lookup(u, p.ProgressToken)
	if !ok {
		// A token this server was not given: a call of another server's,
		// or one that ended; not the server's to report on.
		h.log.Debug("progress for a token the server was not given, dropped", "server", u.Config.Name)
		return
	}
	out := *p
	out.ProgressToken = t.token
	out.Meta = nil
	h.notify(t.session, outbox.Note{Kind: outbox.NoteProgress, Ctx: t.ctx, Server: u.Config.Name, Progress: &out})
}

// Close ends every upstream session and process and waits for them.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.closed.Store(true)
		h.rounds.CancelAll() // calls waiting for a client's next round
		h.tasks.Runner.Close()
		var wg sync.WaitGroup
		for _, u := range h.upstreamList() {
			wg.Add(1)
			go func() { defer wg.Done(); u.Close() }()
		}
		wg.Wait()
		h.code.Close()
	})
	return nil
}

// oauthEnv is what the upstreams' OAuth logins share (upstreamEvents).
func (h *Host) OAuthEnv() *upstream.OAuthEnv { return h.oauth }

func (h *Host) Shortcuts() bool { return !h.noShortcuts }
