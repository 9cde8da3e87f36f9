package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/extensions"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/internal/secrets"
	"github.com/mcphost-project/mcphost/internal/version"
)

// State is where an upstream connection stands.
type State string

const (
	StateConnecting   State = "connecting"
	StateConnected    State = "connected"
	StateDisconnected State = "disconnected" // idle, or waiting to reconnect
	StateFailed       State = "failed"       // the last connect failed; retrying with backoff
	// StateAuthorizing: the server needs an OAuth login, whose link is in
	// Status.AuthURL; it connects once the login completes.
	StateAuthorizing State = "authorizing"
	// StateUnauthorized: the last OAuth login failed (Status.Error says
	// why); the next call starts another.
	StateUnauthorized State = "unauthorized"
)

// Status is an upstream server's state as the CLI and the Go API show it.
type Status struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     State  `json:"state"`
	Error     string `json:"error,omitempty"` // the last error, if any
	// AuthURL is the link to open to authorize mcphost, while State is
	// StateAuthorizing.
	AuthURL string    `json:"authUrl,omitempty"`
	Tools   int       `json:"tools"`
	Since   time.Time `json:"since"` // when State was entered
	// PID is the process of a connected stdio server (the leader of its
	// process group, which mcphost ends with it).
	PID        int `json:"pid,omitempty"`
	Reconnects int `json:"reconnects"`
	InFlight   int `json:"inFlight"`
	// ProtocolVersion is the protocol the shared session speaks: the one
	// asked for, or 2025-11-25 where a server refused server/discover.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// ClientSessions counts the upstream sessions held for single clients
	// (sessions = "per_client"), besides the shared one.
	ClientSessions int `json:"clientSessions,omitempty"`
	// Users counts the callers of a server with oauth mode "per_user" by
	// where their logins stand; nil for other servers.
	Users *UserLogins `json:"users,omitempty"`
	// CallerSecrets names the callers' secrets the server's settings read
	// (${caller.secrets.NAME}); each caller's values are never shown.
	CallerSecrets []string `json:"callerSecrets,omitempty"`
	// Stderr is the last lines a stdio server wrote to stderr, masked: for
	// operators, whatever the state (Error carries it too when it failed).
	Stderr string `json:"stderr,omitempty"`
}

// Backoff bounds for reconnecting; jitter spreads reconnects of many
// upstreams that failed together.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// ErrClosed is returned for calls on a host or upstream that was closed.
var ErrClosed = errors.New("mcphost: closed")

// Server is one configured server: its client, its current session (if
// any), its cached tools and its lifecycle. Sessions come and go (crashes,
// idle disconnects, reconnects); the upstream and its cached tools remain.
type Server struct {
	Config ServerConfig
	log    hclog.Logger
	client *mcp.Client     // the shared session's client
	stdio  *stdioTransport // nil for HTTP transports
	// own is what the server's own session connects with: Config, or for
	// a server with caller templates, Config filled in for no caller
	// (ownErr when that failed).
	own    ServerConfig
	ownErr error
	oauth  sdkauth.OAuthHandler // for a server behind OAuth (oauth.go); nil otherwise
	// userFlows are the logins of the callers of a per_user server, by
	// grant subject (peruser.go); under mu.
	userFlows map[string]*CodeFlow
	// exchangers are the exchanged tokens of the callers of a token
	// exchange server, by identity key (exchange.go); under mu.
	exchangers    map[string]*exchangeFlow
	exchangeMu    sync.Mutex // finds tokenEndpoint once
	tokenEndpoint string
	oauthClient   *http.Client // to the authorization server, with a timeout
	// oauthErr is why a login flow could not be built (no grants store);
	// connects fail with it.
	oauthErr error
	// rawConns are the wrapped connections of live sessions, by session,
	// for raw tool calls (rawcall.go).
	rawConns sync.Map // *mcp.ClientSession -> *tapConn
	events   Events

	// taskConns say what each live session needs for task requests
	// (tasks.go); offersTasks whether the server offered them last.
	taskConns   sync.Map // *mcp.ClientSession -> *taskConn
	offersTasks atomic.Bool
	taskIDs     atomic.Uint64

	ctx    context.Context // ends when the upstream is closed
	cancel context.CancelFunc
	wg     sync.WaitGroup // connect attempts and session watchers

	mu          sync.Mutex
	state       State
	since       time.Time
	lastErr     error
	sess        *mcp.ClientSession
	connectDone chan struct{} // non-nil while a connect attempt runs
	tools       []*mcp.Tool
	caps        *mcp.ServerCapabilities // from the last initialize; kept across disconnects
	feats       ServerFeatures          // prompts and resources, as last listed
	logLevel    mcp.LoggingLevel        // the level set on the shared session
	subs        map[string]int          // resource URI -> downstream subscribers on the shared session
	clients     map[clientKey]*clientConn
	owners      map[*mcp.ClientSession]*clientConn // per-client session -> its bookkeeping
	inflight    int
	lastUsed    time.Time
	reconnects  int  // connected again after a loss (Status.Reconnects)
	wasLost     bool // the session was lost, and not connected since
	backoff     time.Duration
	retryTimer  *time.Timer
	idleTimer   *time.Timer
	closed      bool
	// held is an upstream an operator disconnected (Host.Disconnect): it
	// never connects, and calls to it fail with errHeld, until replaced.
	held bool
	// execs are the tools' execution objects, by tool name, for a server
	// that offers tasks (execution.go), listed with tools.
	execs map[string]json.RawMessage
}

// Events is the seam between the upstream side and the serving core
// (gateway.Host implements it): how a Server tells the core about changes,
// hands it what the server sends that belongs to a downstream client, and
// asks it about the callers of its per-client sessions.
type Events interface {
	// Shortcuts reports whether the host takes its shortcuts
	// (Options.NoShortcuts unset): here, InternalTools' fast path.
	Shortcuts() bool
	ToolsChanged(server string)
	FeaturesChanged(server string)
	Progress(ctx context.Context, u *Server, p *mcp.ProgressNotificationParams)
	LogMessage(u *Server, cs *mcp.ClientSession, p *mcp.LoggingMessageParams)
	ResourceUpdated(u *Server, cs *mcp.ClientSession, p *mcp.ResourceUpdatedNotificationParams)
	ElicitationComplete(u *Server, cs *mcp.ClientSession, p *mcp.ElicitationCompleteParams)
	// TaskStatus forwards notifications/tasks/status (params as sent) to
	// the client whose task it is (2025-11-25 tasks, host/tasks).
	TaskStatus(u *Server, cs *mcp.ClientSession, params json.RawMessage)
	// ServerRequest answers sampling/createMessage, elicitation/create and
	// roots/list from the server by asking the downstream client they belong to.
	ServerRequest(ctx context.Context, u *Server, cs *mcp.ClientSession, method string, req mcp.Request) (mcp.Result, error)
	// ClientSessionStarted prepares a new per-client session for its owner
	// (log level) before it is used.
	ClientSessionStarted(ctx context.Context, u *Server, owner *mcp.ServerSession, cs *mcp.ClientSession)
	// Identity is the caller of a downstream session, nil for none: with
	// sessions = "per_client" an identity's sessions share one upstream
	// session, and a per_user server uses its grant.
	Identity(ss *mcp.ServerSession) *auth.Identity
	// LatestIdentity is identity as the session's latest request
	// presented it: with the access token a token exchange uses.
	LatestIdentity(ss *mcp.ServerSession) *auth.Identity
	// oauthEnv is what OAuth logins of upstreams share (oauthcode.go).
	OAuthEnv() *OAuthEnv
	// SessionLive reports whether a downstream session is still tracked: a
	// request finishing after its session ended must not open a per-client
	// session nobody will close.
	SessionLive(ss *mcp.ServerSession) bool
	// Drained reports whether the host is stopping after a drain (Drain):
	// closing then does not wait again for the calls in flight.
	Drained() bool
	// CallerSecrets returns id's own secrets of names, for the session of
	// server it is starting: an error wrapping ErrSecretNeeded when the
	// caller has not given one of them.
	CallerSecrets(ctx context.Context, server string, id *auth.Identity, names []string) (map[string]CallerSecret, error)
}

// CallerSecret is one of a caller's secrets: its value, and the version
// that tells a session started with it from one started with another
// (CloseCallerSessions).
type CallerSecret struct {
	Value   string
	Version int64
}

// ErrSecretNeeded is wrapped by the error of a caller's session that
// waits for a secret the caller has not given (Events.CallerSecrets).
var ErrSecretNeeded = errors.New("a secret of the caller is needed")

// sharedClientCaps is what a shared session offers upstream: everything a
// downstream client might, since which client a request goes to is only
// known when it arrives. A client that lacks the capability refuses then
// (or, for an extension, ignores what it does not know: host/extensions).
func sharedClientCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{ListChanged: true},
		Sampling:    &mcp.SamplingCapabilities{Tools: &mcp.SamplingToolsCapabilities{}, Context: &mcp.SamplingContextCapabilities{}},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		Extensions:  extensions.Shared(),
	}
}

// New returns the server of cfg, not yet started (Start), which tells
// events what happens to it.
func New(cfg ServerConfig, log hclog.Logger, events Events) *Server {
	u := &Server{Config: cfg, log: log, events: events, state: StateDisconnected, since: time.Now(), backoff: minBackoff,
		subs: make(map[string]int), clients: make(map[clientKey]*clientConn), owners: make(map[*mcp.ClientSession]*clientConn)}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	u.own = cfg
	if cfg.Caller != nil {
		u.own, u.ownErr = cfg.Caller.Apply(cfg, nil, nil)
	}
	if cfg.Transport == TransportStdio {
		u.stdio = newStdioTransport(u.own, log)
	}
	if cfg.OAuth != nil {
		var err error
		if u.oauth, err = newOAuthHandler(cfg.OAuth, cfg.Name, events.OAuthEnv(), log); err != nil {
			u.oauthErr = err // Validate has checked the block; this is the environment
		}
		if f, ok := u.oauth.(*CodeFlow); ok {
			f.authorized = func() {
				u.mu.Lock()
				defer u.mu.Unlock()
				u.connectLocked()
			}
		}
		if u.PerUser() {
			u.userFlows = map[string]*CodeFlow{}
			u.background(u.loadUserGrants)
		}
		if u.exchanges() {
			u.exchangers = map[string]*exchangeFlow{}
			u.oauthClient = &http.Client{Timeout: oauthHTTPTimeout}
		}
	}
	u.client = u.newClient(sharedClientCaps())
	return u
}

// serverToClient are the requests a server sends its client; the host
// answers them from the downstream client.
var serverToClient = map[string]bool{"sampling/createMessage": true, "elicitation/create": true, "roots/list": true}

// newClient builds an MCP client offering caps whose sessions pass
// everything the server sends to the host. Server-to-client requests are
// taken by a receiving middleware before the go-sdk's own handlers, so they
// go downstream untouched (the client would otherwise validate and reject
// some valid elicitation schemas).
// Over HTTP nothing tells a client that its server went away until a
// request fails: a ping every keepAlive marks an idle HTTP or SSE upstream
// that stopped answering within a few seconds. Two must fail in a row, so
// one slow answer does not tear a session down. A stdio server's exit is
// seen at once, and a sequential one must not lose its session for being
// busy, so it is not pinged.
const (
	keepAlive         = 3 * time.Second
	keepAliveFailures = 2
)

func (u *Server) newClient(caps *mcp.ClientCapabilities) *mcp.Client {
	var ping time.Duration
	if u.Config.Transport != TransportStdio && u.Config.Transport != TransportInternal {
		ping = keepAlive
	}
	opts := &mcp.ClientOptions{
		Capabilities:              caps,
		KeepAlive:                 ping,
		KeepAliveFailureThreshold: keepAliveFailures,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			u.log.Debug("upstream tools changed")
			u.background(u.refreshTools)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			u.log.Debug("upstream prompts changed")
			u.background(u.refreshFeatures)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			u.log.Debug("upstream resources changed")
			u.background(u.refreshFeatures)
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			u.events.ResourceUpdated(u, req.Session, req.Params)
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			u.events.Progress(ctx, u, req.Params)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			u.logUpstreamLog(req.Params)
			u.events.LogMessage(u, req.Session, req.Params)
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			u.events.ElicitationComplete(u, req.Session, req.Params)
		},
	}
	u.inputRequestHandlers(opts, caps)
	c := mcp.NewClient(&mcp.Implementation{Name: "mcphost", Version: version.Version}, opts)
	c.AddSendingMiddleware(u.levelInMeta)
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if serverToClient[method] {
				cs, _ := req.GetSession().(*mcp.ClientSession)
				return u.events.ServerRequest(ctx, u, cs, method, req)
			}
			return next(ctx, method, req)
		}
	})
	return c
}

// inputRequestHandlers sets the handlers the go-sdk client calls for the
// input requests of a 2026-07-28 server's input_required result: its
// client runs those rounds itself, within the call, so the questions go to
// the host as a 2025-11-25 server's requests do (the receiving middleware
// of newClient never sees them). Only for what caps offers: a handler would
// add its capability. The go-sdk answers a roots/list input request from
// the client's own roots (none), with no handler to ask the host.
func (u *Server) inputRequestHandlers(opts *mcp.ClientOptions, caps *mcp.ClientCapabilities) {
	if caps == nil {
		return
	}
	if caps.Elicitation != nil {
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			res, err := u.events.ServerRequest(ctx, u, req.Session, "elicitation/create", req)
			if err != nil {
				return nil, err
			}
			er, ok := res.(*mcp.ElicitResult)
			if !ok {
				return nil, fmt.Errorf("upstream: the answer to an elicitation is a %T", res)
			}
			return er, nil
		}
	}
	if caps.Sampling != nil {
		opts.CreateMessageWithToolsHandler = func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			res, err := u.events.ServerRequest(ctx, u, req.Session, "sampling/createMessage", req)
			if err != nil {
				return nil, err
			}
			switch r := res.(type) {
			case *mcp.CreateMessageWithToolsResult:
				return r, nil
			case *mcp.CreateMessageResult:
				return &mcp.CreateMessageWithToolsResult{Meta: r.Meta, Model: r.Model, Role: r.Role, StopReason: r.StopReason, Content: []mcp.Content{r.Content}}, nil
			}
			return nil, fmt.Errorf("upstream: the answer to a sampling request is a %T", res)
		}
	}
}

// background runs f on a goroutine that close waits for.
func (u *Server) background(f func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	u.wg.Add(1)
	go func() { defer u.wg.Done(); f() }()
}

// connectWith opens a session to the server with client. Its connection,
// where mcphost wraps it (stdio and SSE), can also carry raw tool calls
// (rawcall.go).
func (u *Server) connectWith(ctx context.Context, client *mcp.Client, oauth sdkauth.OAuthHandler) (*mcp.ClientSession, error) {
	if u.ownErr != nil {
		return nil, u.ownErr
	}
	return u.connectAs(ctx, client, oauth, dialSpec{cfg: u.own, stdio: u.stdio})
}

// dialSpec is what one session connects with: the server's own settings,
// or one caller's (callerSpec).
type dialSpec struct {
	cfg     ServerConfig
	stdio   *stdioTransport  // nil for HTTP transports
	secrets map[string]int64 // the versions of the caller's secrets in cfg
	hide    []string         // their values, taken out of the session's errors
}

// callerSpec fills the server's caller templates in for the caller of
// owner, for that caller's own session, with their secrets where the
// templates read some.
func (u *Server) callerSpec(ctx context.Context, owner *mcp.ServerSession) (dialSpec, error) {
	id := u.events.Identity(owner)
	if id == nil {
		return dialSpec{}, fmt.Errorf("server %q gives each caller their own upstream (its settings use the caller's values), and this caller has no identity: call it with an API key or an OAuth token (listen.auth)", u.Config.Name)
	}
	var values map[string]string
	var versions map[string]int64
	if names := u.Config.Caller.Secrets(); len(names) > 0 {
		secrets, err := u.events.CallerSecrets(ctx, u.Config.Name, id, names)
		if err != nil {
			return dialSpec{}, err
		}
		values, versions = make(map[string]string, len(secrets)), make(map[string]int64, len(secrets))
		for n, s := range secrets {
			values[n], versions[n] = s.Value, s.Version
		}
	}
	cfg, err := u.Config.Caller.Apply(u.Config, id, values)
	if err != nil {
		return dialSpec{}, err
	}
	spec := dialSpec{cfg: cfg, secrets: versions}
	for _, v := range values {
		spec.hide = append(spec.hide, v)
	}
	if cfg.Transport == TransportStdio {
		spec.stdio = newStdioTransport(cfg, u.log)
	}
	return spec, nil
}

// connectAs is connectWith with spec's settings.
func (u *Server) connectAs(ctx context.Context, client *mcp.Client, oauth sdkauth.OAuthHandler, spec dialSpec) (*mcp.ClientSession, error) {
	if u.oauthErr != nil {
		return nil, fmt.Errorf("oauth: %w", u.oauthErr)
	}
	var bound atomic.Pointer[mcp.ClientSession]
	var conn atomic.Pointer[TapConn]
	init := &initCapture{}
	t, err := u.transport(spec, &bound, &conn, oauth, init)
	if err != nil {
		return nil, err
	}
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: u.Config.ProtocolVersion})
	if err != nil {
		// The go-sdk does not close the connection on every failure after
		// it is made (one opening subscriptions/listen does not): a stdio
		// server would be left running.
		if c := conn.Load(); c != nil {
			_ = c.Close()
		}
		return nil, err
	}
	bound.Store(cs)
	u.noteTasks(cs, spec, init, oauth != nil)
	if c := conn.Load(); c != nil {
		u.rawConns.Store(cs, c)
		if !c.alive() { // it went before bound was set, so gone could not forget it
			u.rawConns.CompareAndDelete(cs, c)
		}
	}
	return cs, nil
}

// transport returns a new transport to the server, authorized by oauth
// when it is behind OAuth; bound is set to the session once connected (see
// tapTransport and sseTap), conn to the wrapped connection where there is
// one.
func (u *Server) transport(spec dialSpec, bound *atomic.Pointer[mcp.ClientSession], conn *atomic.Pointer[TapConn], oauth sdkauth.OAuthHandler, init *initCapture) (mcp.Transport, error) {
	switch spec.cfg.Transport {
	case TransportStdio:
		return TapTransport{Transport: spec.stdio, U: u, Bound: bound, conn: conn, init: init}, nil
	case TransportSSE:
		sse := &mcp.SSEClientTransport{Endpoint: spec.cfg.URL, HTTPClient: headerClient(spec.cfg.Headers)}
		return TapTransport{Transport: detachedTransport{Transport: sse, life: u.ctx}, U: u, Bound: bound, conn: conn, init: init}, nil
	case TransportStreamableHTTP:
		var rt http.RoundTripper = http.DefaultTransport
		if len(spec.cfg.Headers) > 0 {
			rt = HeaderTransport{Base: rt, Headers: spec.cfg.Headers}
		}
		client := &http.Client{Transport: sseTap{base: rt, u: u, bound: bound, init: init}}
		return &mcp.StreamableClientTransport{Endpoint: spec.cfg.URL, HTTPClient: client, OAuthHandler: oauth}, nil
	case TransportInternal:
		var fast InternalTools
		if u.events.Shortcuts() {
			fast = u.Config.InternalTools
		}
		ct, st := memPipe(fast)
		if _, err := u.Config.Internal.Connect(u.ctx, st, nil); err != nil {
			return nil, err
		}
		return TapTransport{Transport: ct, U: u, Bound: bound, conn: conn, init: init}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", spec.cfg.Transport)
}

// Start begins the first connect without waiting for it.
func (u *Server) Start() <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.connectLocked()
}

// connectLocked starts a connect attempt unless one is running or a session
// is up; it returns a channel closed when the attempt ends.
func (u *Server) connectLocked() <-chan struct{} {
	if u.connectDone != nil {
		return u.connectDone
	}
	done := make(chan struct{})
	if u.closed || u.sess != nil || u.held {
		close(done)
		return done
	}
	u.connectDone = done
	u.SetStateLocked(StateConnecting, u.lastErr)
	if u.retryTimer != nil {
		u.retryTimer.Stop()
		u.retryTimer = nil
	}
	u.wg.Add(1)
	go u.connect(done)
	return done
}

// slowConnect is when a connect still running is logged.
const slowConnect = 5 * time.Second

// waitingFor says what a connect waits on, for logs and errors.
func (u *Server) waitingFor() string {
	switch u.Config.Transport {
	case TransportStdio, "":
		return fmt.Sprintf("the process %q, which has not answered initialize (a first npx or go run may still be fetching or building)", u.Config.Command)
	case TransportInternal:
		return "the tool plugin's server"
	}
	return "the server at " + secrets.MaskURLs(u.Config.URL) + ", which has not answered initialize"
}

func (u *Server) connect(done chan struct{}) {
	defer u.wg.Done()
	defer close(done)
	ctx, cancel := context.WithTimeout(u.ctx, u.Config.ConnectTimeout)
	defer cancel()
	// A connect that takes long says so, and what it waits for, rather
	// than nothing until connect_timeout.
	slow := time.AfterFunc(slowConnect, func() {
		u.log.Info("still connecting", "waited", slowConnect.String(), "connect_timeout", u.Config.ConnectTimeout.String(), "waiting_for", u.waitingFor())
	})
	cs, tools, execs, feats, err := u.dial(ctx)
	slow.Stop()
	if errors.Is(err, context.DeadlineExceeded) && u.ctx.Err() == nil {
		err = fmt.Errorf("no answer within connect_timeout (%s) from %s: %w", u.Config.ConnectTimeout, u.waitingFor(), err)
	}

	u.mu.Lock()
	u.connectDone = nil
	if u.closed {
		u.mu.Unlock()
		if cs != nil {
			cs.Close()
		}
		return
	}
	if err != nil {
		u.SetStateLocked(StateFailed, err)
		u.scheduleRetryLocked()
		u.mu.Unlock()
		u.log.Warn("upstream connect failed", u.withStderr("error", err)...)
		return
	}
	u.sess = cs
	if u.wasLost {
		// Counted here, whoever asked: the retry timer, or a call
		// that came first.
		u.reconnects++
		u.wasLost = false
	}
	u.tools, u.execs = tools, execs
	if feats != nil {
		u.feats = *feats
	}
	if res := cs.InitializeResult(); res != nil {
		u.caps = res.Capabilities
	}
	u.backoff = minBackoff
	u.SetStateLocked(StateConnected, nil)
	u.armIdleLocked()
	u.wg.Add(2)
	go u.watch(cs)
	go func() { defer u.wg.Done(); u.restore(cs) }()
	u.mu.Unlock()
	u.log.Info("upstream connected", "tools", len(tools))
	u.events.ToolsChanged(u.Config.Name)
	u.events.FeaturesChanged(u.Config.Name)
}

// restore re-applies what downstream clients set on the shared session
// (log level, resource subscriptions) to a new one after a reconnect.
func (u *Server) restore(cs *mcp.ClientSession) {
	u.mu.Lock()
	level := u.logLevel
	uris := make([]string, 0, len(u.subs))
	for uri := range u.subs {
		uris = append(uris, uri)
	}
	u.mu.Unlock()
	ctx, cancel := context.WithTimeout(u.ctx, u.Config.Timeout)
	defer cancel()
	if level != "" {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			u.log.Debug("restoring log level failed", "error", u.MaskMarked(err))
		}
	}
	for _, uri := range uris {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			u.log.Debug("restoring subscription failed", "uri", uri, "error", u.MaskMarked(err))
		}
	}
}

// dial connects and lists tools, prompts and resources: a session is only
// usable once its tools are known.
func (u *Server) dial(ctx context.Context) (*mcp.ClientSession, []*mcp.Tool, map[string]json.RawMessage, *ServerFeatures, error) {
	cs, err := u.connectWith(ctx, u.client, u.oauth)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("connecting: %w", err)
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		cs.Close()
		return nil, nil, nil, nil, fmt.Errorf("listing tools: %w", err)
	}
	execs := u.listExecutions(ctx, cs)
	feats, err := listFeatures(ctx, u.Config.Name, cs)
	if err != nil {
		// Tools still work; the last known prompts and resources stay
		// listed until the next list_changed or reconnect.
		u.log.Warn("listing prompts and resources failed", "error", u.MaskMarked(err))
		return cs, tools, execs, nil, nil
	}
	return cs, tools, execs, &feats, nil
}

// listFeatures lists the prompts, resources and resource templates a
// server's capabilities say it has.
func listFeatures(ctx context.Context, server string, cs *mcp.ClientSession) (ServerFeatures, error) {
	f := ServerFeatures{Server: server}
	var caps *mcp.ServerCapabilities
	if res := cs.InitializeResult(); res != nil {
		caps = res.Capabilities
	}
	if caps == nil {
		return f, nil
	}
	// A server that does not implement one of these lists (-32601) has
	// none of it; the others still count.
	var err error
	if caps.Prompts != nil {
		if f.Prompts, err = listAll(cs.Prompts(ctx, nil), "prompts"); err != nil {
			return f, err
		}
	}
	if caps.Resources != nil {
		if f.Resources, err = listAll(cs.Resources(ctx, nil), "resources"); err != nil {
			return f, err
		}
		if f.Templates, err = listAll(cs.ResourceTemplates(ctx, nil), "resource templates"); err != nil {
			return f, err
		}
	}
	return f, nil
}

// listAll collects a list a server pages through; one the server does not
// implement (-32601) is empty, not an error.
func listAll[T any](items iter.Seq2[T, error], what string) ([]T, error) {
	var out []T
	for item, err := range items {
		if wire.MethodNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return out, fmt.Errorf("listing %s: %w", what, err)
		}
		out = append(out, item)
	}
	return out, nil
}

// stderrTail is what a stdio server last wrote to stderr, masked, which
// usually says why it failed (a missing file, a bad flag, a crash). It is
// for operators (status, logs) only: errors that reach clients never carry
// it, since servers print their configuration, secrets included, when they
// fail, and masking cannot know every secret.
func (u *Server) stderrTail() string {
	if u.stdio == nil {
		return ""
	}
	return u.stdio.stderr.Tail()
}

// logUpstreamLog writes a server's log message to mcphost's debug log,
// masked as its stderr is: servers log their configuration too.
func (u *Server) logUpstreamLog(p *mcp.LoggingMessageParams) {
	if !u.log.IsDebug() {
		return
	}
	data, err := json.Marshal(p.Data)
	if err != nil {
		data = []byte(fmt.Sprint(p.Data))
	}
	u.log.Debug("upstream log", "level", p.Level, "logger", secrets.Mask(p.Logger), "data", secrets.Mask(string(data)))
}

// withStderr is a log line's key and value, plus the stderr tail if any,
// the secrets the admin API marked taken out of both.
func (u *Server) withStderr(key string, v any) []any {
	if err, ok := v.(error); ok {
		v = u.MaskMarked(err)
	}
	if tail := u.stderrTail(); tail != "" {
		return []any{key, v, "stderr", redactMarked(tail, u.Config)}
	}
	return []any{key, v}
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	if res := cs.InitializeResult(); res != nil && res.Capabilities != nil && res.Capabilities.Tools == nil {
		return nil, nil // a server without tools (prompts or resources only)
	}
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// watch waits for a session to end and, unless we ended it, reconnects.
func (u *Server) watch(cs *mcp.ClientSession) {
	defer u.wg.Done()
	u.Lost(cs, cs.Wait())
}

// Lost handles the end of the shared session cs (seen by its watcher, or by
// a call that failed because the connection closed, whichever comes first):
// unless it was ended on purpose, it reconnects.
func (u *Server) Lost(cs *mcp.ClientSession, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sess != cs || u.closed {
		return // closed on purpose: idle, shutdown or replaced
	}
	u.sess = nil
	u.wasLost = true
	cause := errors.New("connection closed by the server")
	if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		cause = fmt.Errorf("connection lost: %w", err)
	}
	u.SetStateLocked(StateDisconnected, cause)
	u.log.Warn("upstream disconnected; reconnecting", u.withStderr("error", u.lastErr)...)
	u.scheduleRetryLocked()
	// A failed call may see the loss first: end the session, so that its
	// watcher and keepalive stop (over HTTP nothing else would end it).
	go cs.Close()
}

func (u *Server) scheduleRetryLocked() {
	if u.closed || u.retryTimer != nil {
		return
	}
	d := u.backoff
	u.backoff = min(u.backoff*2, maxBackoff)
	d = d/2 + rand.N(d) // jitter in [d/2, 3d/2)
	u.retryTimer = time.AfterFunc(d, func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.retryTimer = nil
		if u.closed || u.sess != nil || u.connectDone != nil {
			return
		}
		u.connectLocked()
	})
}

// armIdleLocked schedules the idle check; a negative IdleTimeout never disconnects.
func (u *Server) armIdleLocked() {
	if u.Config.IdleTimeout <= 0 {
		return
	}
	wait := u.Config.IdleTimeout
	if !u.lastUsed.IsZero() {
		wait = max(time.Until(u.lastUsed.Add(u.Config.IdleTimeout)), time.Millisecond)
	}
	if u.idleTimer != nil {
		u.idleTimer.Stop()
	}
	u.idleTimer = time.AfterFunc(wait, u.idleCheck)
}

func (u *Server) idleCheck() {
	u.mu.Lock()
	cs := u.sess
	if cs == nil || u.closed {
		u.mu.Unlock()
		return
	}
	if u.inflight > 0 || (!u.lastUsed.IsZero() && time.Since(u.lastUsed) < u.Config.IdleTimeout) {
		u.armIdleLocked() // a call in flight holds the connection
		u.mu.Unlock()
		return
	}
	u.sess = nil
	u.SetStateLocked(StateDisconnected, nil)
	u.mu.Unlock()
	u.log.Info("upstream idle; disconnected", "idle_timeout", u.Config.IdleTimeout)
	cs.Close()
}

// session returns a live session, connecting on demand and waiting for a
// connect in progress, within ctx.
func (u *Server) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, ErrClosed
	}
	if cs := u.sess; cs != nil {
		u.mu.Unlock()
		return cs, nil
	}
	if u.held {
		u.mu.Unlock()
		return nil, u.heldError()
	}
	done := u.connectLocked()
	u.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sess != nil {
		return u.sess, nil
	}
	if u.closed {
		return nil, ErrClosed
	}
	if u.lastErr != nil {
		return nil, u.lastErr
	}
	return nil, errors.New("not connected")
}

// Acquire marks a call in flight, which holds the connection open.
func (u *Server) Acquire() {
	u.mu.Lock()
	u.inflight++
	u.lastUsed = time.Now()
	u.mu.Unlock()
}

func (u *Server) Release() {
	u.mu.Lock()
	u.inflight--
	u.lastUsed = time.Now()
	u.mu.Unlock()
}

// refreshTools re-lists tools after an upstream's list_changed notification.
func (u *Server) refreshTools() {
	cs := u.LiveSession()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(u.ctx, u.Config.Timeout)
	defer cancel()
	tools, err := listTools(ctx, cs)
	if err != nil {
		u.log.Warn("refreshing tools failed", "error", u.MaskMarked(err))
		return
	}
	execs := u.listExecutions(ctx, cs)
	u.mu.Lock()
	u.tools, u.execs = tools, execs
	u.mu.Unlock()
	u.events.ToolsChanged(u.Config.Name)
}

// refreshFeatures re-lists prompts and resources after a list_changed notification.
func (u *Server) refreshFeatures() {
	cs := u.LiveSession()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(u.ctx, u.Config.Timeout)
	defer cancel()
	feats, err := listFeatures(ctx, u.Config.Name, cs)
	if err != nil {
		u.log.Warn("refreshing prompts and resources failed", "error", u.MaskMarked(err))
		return
	}
	u.mu.Lock()
	u.feats = feats
	u.mu.Unlock()
	u.events.FeaturesChanged(u.Config.Name)
}

// CachedFeatures returns the last known prompts and resources.
func (u *Server) CachedFeatures() ServerFeatures {
	u.mu.Lock()
	defer u.mu.Unlock()
	f := u.feats
	f.Server = u.Config.Name
	return f
}

// Capabilities returns what the server offered when it last connected.
func (u *Server) Capabilities() *mcp.ServerCapabilities {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.caps
}

// CachedTools returns the last known tools, kept across disconnects so the
// catalog does not flicker while a server reconnects or idles.
func (u *Server) CachedTools() []*mcp.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tools
}

func (u *Server) SetStateLocked(s State, err error) {
	u.lastErr = err
	if u.state != s {
		u.state = s
		u.since = time.Now()
	}
}

func (u *Server) Status() Status {
	users := u.userLogins() // takes u.mu
	u.mu.Lock()
	defer u.mu.Unlock()
	st := Status{
		Users:      users,
		Name:       u.Config.Name,
		Transport:  u.Config.Transport,
		State:      u.state,
		Tools:      len(u.tools),
		Since:      u.since,
		Reconnects: u.reconnects,
		InFlight:   u.inflight,

		ClientSessions: len(u.clients),
	}
	if u.stdio != nil && u.sess != nil {
		st.PID = int(u.stdio.pid.Load())
	}
	if u.sess != nil {
		if ir := u.sess.InitializeResult(); ir != nil {
			st.ProtocolVersion = ir.ProtocolVersion
		}
	}
	if u.Config.Caller != nil {
		st.CallerSecrets = u.Config.Caller.Secrets()
	}
	// The secrets the admin API marked too: a failed connection quotes
	// the URL, and a server may print its args.
	st.Stderr = redactMarked(u.stderrTail(), u.Config)
	if u.lastErr != nil {
		st.Error = wire.ErrorText(u.lastErr)
		if tail := u.stderrTail(); tail != "" {
			st.Error += "; stderr: " + tail
		}
		st.Error = redactMarked(st.Error, u.Config)
	}
	if f, ok := u.oauth.(*CodeFlow); ok {
		// A login waiting (a revoked grant, a step-up) shows even while the
		// old session is still up: what the operator must do is open it.
		if link := f.pendingURL(); link != "" {
			st.State, st.AuthURL = StateAuthorizing, link
		} else if err := f.LastLoginError(); err != nil && st.State != StateConnected {
			st.State, st.Error = StateUnauthorized, "OAuth login failed: "+wire.ErrorText(err)
		}
	}
	return st
}

// Close ends the session and any connect attempt, and waits for them, so no
// upstream process outlives it.
func (u *Server) Close() {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return
	}
	u.closed = true
	cs := u.sess
	u.sess = nil
	if u.retryTimer != nil {
		u.retryTimer.Stop()
	}
	if u.idleTimer != nil {
		u.idleTimer.Stop()
	}
	clients := u.takeClientsLocked(nil, false)
	u.mu.Unlock()
	u.cancel()
	if f, ok := u.oauth.(*CodeFlow); ok {
		f.close()
	}
	u.closeUserFlows()
	if cs != nil {
		u.drainRaw(cs)
		cs.Close()
	}
	u.closeClients(clients)
	u.wg.Wait()
}

// headerClient returns an HTTP client that adds the configured headers to
// every request to an HTTP upstream.
func headerClient(headers map[string]string) *http.Client {
	if len(headers) == 0 {
		return nil
	}
	return &http.Client{Transport: HeaderTransport{Base: http.DefaultTransport, Headers: headers}}
}

type HeaderTransport struct {
	Base    http.RoundTripper
	Headers map[string]string
}

func (t HeaderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.Headers {
		r.Header.Set(k, v)
	}
	return t.Base.RoundTrip(r)
}

// detachedTransport connects under the upstream's lifetime rather than the
// connect attempt's context: the SSE client ties its event stream to the
// context it connects with, so a connect timeout would otherwise end the
// stream as soon as the connect returned. The attempt's context still
// bounds how long Connect may take.
type detachedTransport struct {
	mcp.Transport
	life context.Context
}

func (t detachedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	type result struct {
		conn mcp.Connection
		err  error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := t.Transport.Connect(t.life)
		done <- result{conn, err}
	}()
	select {
	case r := <-done:
		return r.conn, r.err
	case <-ctx.Done():
		go func() { // close whatever arrives late
			if r := <-done; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// AddSub counts one more client subscribed to uri on the shared session;
// true when it is the first, so the upstream must be subscribed.
func (u *Server) AddSub(uri string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.subs[uri]++
	return u.subs[uri] == 1
}

// DropSub counts one client fewer; true when none is left.
func (u *Server) DropSub(uri string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.subs[uri] == 0 {
		return false
	}
	u.subs[uri]--
	if u.subs[uri] == 0 {
		delete(u.subs, uri)
		return true
	}
	return false
}

// SetSharedLevel records the level wanted on the shared session; true if it changed.
func (u *Server) SetSharedLevel(level mcp.LoggingLevel) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.logLevel == level {
		return false
	}
	u.logLevel = level
	return true
}

// LiveSession returns the shared session if connected, without connecting.
func (u *Server) LiveSession() *mcp.ClientSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sess
}

// IsHeld reports whether an operator disconnected u (Host.Disconnect).
func (u *Server) IsHeld() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.held
}

// heldError is what a call to a server an operator disconnected gets.
func (u *Server) heldError() error {
	return fmt.Errorf("server %q was disconnected by an operator; reconnect it (mcphost servers reconnect %s)", u.Config.Name, u.Config.Name)
}

// ServerFeatures is one upstream's prompts and resources, as last listed.
type ServerFeatures struct {
	Server    string
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
}

// NewHeld is New for a server an operator disconnected (Host.Disconnect):
// it never connects, and calls to it fail, until it is replaced.
func NewHeld(cfg ServerConfig, log hclog.Logger, events Events) *Server {
	u := New(cfg, log, events)
	u.held = true
	u.SetStateLocked(StateDisconnected, errors.New("disconnected by an operator"))
	u.since = time.Now()
	return u
}

// Logger is the server's logger, named after it.
func (u *Server) Logger() hclog.Logger { return u.log }

// SharedClient is the client of the shared session (sessions = "shared").
func (u *Server) SharedClient() *mcp.Client { return u.client }

// LogsIn reports whether the server is reached through an authorization
// code login (a person's, in a browser), rather than no OAuth or a grant
// mcphost completes alone.
func (u *Server) LogsIn() bool {
	_, ok := u.oauth.(*CodeFlow)
	return ok
}

// Connecting returns a channel closed when the connect attempt running
// now ends, or nil when none runs.
func (u *Server) Connecting() <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.connectDone == nil {
		return nil
	}
	return u.connectDone
}

// Dormant reports whether no connect attempt runs and none is scheduled.
func (u *Server) Dormant() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.retryTimer == nil && u.connectDone == nil
}
