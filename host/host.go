// Package host is mcphost's MCP engine: it connects to the configured
// upstream servers, names their tools into one catalog, routes calls, asks a
// Policy what each caller may see and do, and serves the result as one MCP
// server over streamable HTTP, SSE and stdio.
//
// Lifecycle: New validates a Config; Start connects every upstream
// concurrently; Tools and CallTool use the catalog; Close ends every
// upstream session and process. The CLI and embedders use the same API.
package host

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
)

// Version is mcphost's version, reported to upstreams and downstream clients.
var Version = "0.1.0"

// ErrUnknownTool is returned (wrapped) for a call to a name the caller cannot see.
var ErrUnknownTool = errors.New("unknown tool")

// ErrInvalidArguments is returned (wrapped) for a call whose arguments the
// gateway refuses to forward (bytes that are not UTF-8).
var ErrInvalidArguments = errors.New("invalid arguments")

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
}

// Host is a running gateway. It is safe for concurrent use.
type Host struct {
	cfg          Config
	log          hclog.Logger
	policyStatus func() any
	policy       Policy
	noShortcuts  bool

	upMu      sync.RWMutex         // guards upstreams, byName and cfg across Reconfigure
	upstreams []*upstream          // config order
	byName    map[string]*upstream // server name -> upstream

	catMu          sync.Mutex // serialises catalog rebuilds
	cat            atomic.Pointer[catalog]
	catPrint       [32]byte
	featMu         sync.Mutex // serialises prompt and resource rebuilds
	feats          atomic.Pointer[features]
	views          viewCache
	progressRoutes progressRouter
	calls          callRegistry
	sessions       sessionTable
	fastSessions   fastListSessions
	elicitations   elicitationRoutes
	servers        serverSet
	closeOnce      sync.Once
	closed         atomic.Bool
	namingLog      conditionLog // tool naming problems, said once
	featuresLog    conditionLog // prompt and resource problems, said once
	refusedLog     conditionLog // kinds of server-to-client requests refused, said once
	lists          listCache    // answers of the list hook
	reloadMu       sync.Mutex
	reload         *ReloadStatus // the latest, for GET /status
}

// New validates cfg and builds a host. It starts nothing: call Start.
func New(cfg Config, opts *Options) (*Host, error) {
	if opts == nil {
		opts = &Options{}
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	h := &Host{
		cfg:          cfg,
		log:          log,
		policy:       opts.Policy,
		policyStatus: opts.PolicyStatus,
		noShortcuts:  opts.NoShortcuts,
		byName:       make(map[string]*upstream, len(cfg.Servers)),
	}
	h.views.init()
	h.progressRoutes.init()
	h.cat.Store(buildCatalog(0, cfg.Tools, nil))
	h.feats.Store(buildFeatures(cfg.Tools, cfg.Resources, nil))
	for _, sc := range cfg.Servers {
		u := newUpstream(sc, log.Named(sc.Name), h)
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
	ups := h.upstreamList()
	waits := make([]<-chan struct{}, len(ups))
	for i, u := range ups {
		waits[i] = u.start()
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
func (h *Host) Statuses() []Status {
	ups := h.upstreamList()
	out := make([]Status, len(ups))
	for i, u := range ups {
		out[i] = u.status()
	}
	return out
}

func (h *Host) upstreamList() []*upstream {
	h.upMu.RLock()
	defer h.upMu.RUnlock()
	return h.upstreams
}

func (h *Host) upstreamNamed(name string) *upstream {
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

// CallTool calls a tool by its exposed name. A failure of the tool or its
// upstream (down, timed out, closed mid-call) or a policy denial comes back
// as a result with IsError set; the error is only for a name the caller
// cannot see (ErrUnknownTool), a policy that fails closed on listing, or a
// closed host.
func (h *Host) CallTool(ctx context.Context, caller abi.Caller, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	res, err := h.callTool(ctx, caller, name, args, nil, nil)
	if err != nil {
		return nil, err
	}
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r, nil
	case *rawToolResult:
		return r.typed()
	}
	return nil, fmt.Errorf("unexpected result type %T", res)
}

// callTool is the whole call path: resolve, admit, call, transform. The
// result is a *mcp.CallToolResult, or a *rawToolResult for a downstream
// session that takes results as sent (plainResults) when no policy reads
// them.
func (h *Host) callTool(ctx context.Context, caller abi.Caller, name string, args json.RawMessage, meta mcp.Meta, ss *mcp.ServerSession) (mcp.Result, error) {
	if h.closed.Load() {
		return nil, ErrClosed
	}
	if err := checkArguments(args); err != nil {
		return nil, err
	}
	v, err := h.view(ctx, caller)
	if err != nil {
		return nil, err
	}
	r, ok := v.routes[name]
	if !ok {
		return h.hiddenCall(ctx, caller, name, args)
	}
	u := h.upstreamNamed(r.server)
	if u == nil { // removed by a reload since the view was built
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}

	annotations := h.cat.Load().annotations(r)
	if h.wants(abi.HookToolCall) {
		in := &abi.ToolCallInput{Caller: caller, Name: name, Server: r.server, Tool: r.tool, Arguments: args, Annotations: annotations}
		d, err := h.policy.ToolCall(ctx, in)
		if err != nil {
			h.log.Debug("policy failed on a call", "tool", name, "error", err)
			return errorResult("call to %s refused: %s", name, policyMessage(err)), nil
		}
		switch d.Action {
		case abi.ActionAllow, "":
		case abi.ActionDeny:
			if d.Hidden {
				return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
			}
			reason := d.Reason
			if reason == "" {
				reason = "denied by policy"
			}
			return errorResult("call to %s denied: %s", name, cleanText(reason)), nil
		case abi.ActionRewrite:
			if err := checkArguments(d.Arguments); err != nil {
				return errorResult("call to %s refused: the policy's rewritten arguments are not valid UTF-8", name), nil
			}
			args = d.Arguments
		case abi.ActionRespond:
			return fromABIResult(d.Result)
		default:
			return errorResult("call to %s refused: policy returned unknown action %s", name, cleanText(strconv.Quote(d.Action))), nil
		}
	}

	// A reload swaps servers and policies together (Reconfigure): a call
	// whose server went or changed while it was being admitted may have
	// been admitted by the new policies, which do not cover that server.
	if h.upstreamNamed(r.server) != u {
		return errorResult("call to %s refused: the config was reloaded during the call; call again", name), nil
	}

	params := &mcp.CallToolParams{Name: r.tool, Arguments: args}
	if len(args) == 0 {
		params.Arguments = nil
	}
	upMeta, done := h.upstreamMeta(ctx, ss, meta)
	defer done()
	params.Meta = upMeta
	wantsResult := h.wants(abi.HookToolResult)
	// Raw calls when the result can go downstream as sent, or be read by
	// policies that say so when they leave it unchanged.
	raw := !h.noShortcuts && plainResults(ss) && (!wantsResult || h.keepsResults())
	var res *mcp.CallToolResult
	var rawRes json.RawMessage
	err = h.forward(ctx, ss, u, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		if c := u.rawConn(cs); raw && c != nil && plainUpstream(cs) {
			rawRes, err = c.callTool(ctx, &rawCallParams{Meta: upMeta, Name: r.tool, Arguments: args})
			return err
		}
		res, err = cs.CallTool(ctx, params)
		return err
	})
	if err != nil {
		// A failed call becomes an error result whose text comes in part
		// from the upstream (its JSON-RPC error message): it goes through
		// the result policies like any result, so redact sees it.
		res, rawRes = upstreamErrorResult(r.server, u.cfg.Timeout, err), nil
	}
	// The result travels as the upstream's bytes when the go-sdk would accept
	// them and, past policies, the policies saw every one of them; otherwise
	// it is typed, and what goes out is encoded from what policies returned.
	rawOK := rawRes != nil && checkToolResult(rawRes) == nil && (!wantsResult || policiesSeeAll(rawRes))
	if rawRes != nil && !rawOK {
		res = new(mcp.CallToolResult)
		if err := json.Unmarshal(rawRes, res); err != nil {
			res = upstreamErrorResult(r.server, u.cfg.Timeout, fmt.Errorf("calling \"tools/call\": %w", err))
		}
	}
	if !wantsResult {
		if rawOK {
			return &rawToolResult{raw: rawRes}, nil
		}
		return res, nil
	}
	in := &abi.ToolResultInput{Caller: caller, Name: name, Server: r.server, Tool: r.tool, Arguments: args, Annotations: annotations}
	if rawOK {
		in.Result, err = rawABIResult(rawRes)
	} else {
		in.Result, err = toABIResult(res)
	}
	if err != nil {
		return errorResult("result of %s could not be passed to policies: %v", name, err), nil
	}
	out, err := h.policy.ToolResult(ctx, in)
	if err != nil {
		h.log.Debug("policy failed on a result", "tool", name, "error", err)
		return errorResult("result of %s withheld by policy: %s", name, policyMessage(err)), nil
	}
	if rawOK && out == in.Result {
		return &rawToolResult{raw: rawRes}, nil // unchanged (ResultKeeper)
	}
	return fromABIResult(out)
}

// upstreamErrorResult turns a failed upstream call into a tool error that
// names the server and the cause, as MCP asks for tool-level failures.
func upstreamErrorResult(server string, timeout time.Duration, err error) *mcp.CallToolResult {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errorResult("server %q: call timed out after %s", server, timeout)
	case errors.Is(err, context.Canceled):
		return errorResult("server %q: call cancelled", server)
	case errors.Is(err, mcp.ErrConnectionClosed):
		return errorResult("server %q: connection closed during the call: %s", server, errorText(err))
	}
	return errorResult("server %q: %s", server, errorText(err))
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// toolsChanged rebuilds the catalog from every upstream's cached tools and,
// when what clients can see changed, tells them.
func (h *Host) toolsChanged(string) {
	h.catMu.Lock()
	defer h.catMu.Unlock()
	h.upMu.RLock()
	ups, toolsCfg := h.upstreams, h.cfg.Tools
	h.upMu.RUnlock()
	sts := make([]serverTools, len(ups))
	for i, u := range ups {
		sts[i] = serverTools{server: u.cfg.Name, tools: u.cachedTools()}
	}
	old := h.cat.Load()
	next := buildCatalog(old.version+1, toolsCfg, sts)
	print := fingerprint(next.tools)
	if print == h.catPrint && old.version > 0 {
		return
	}
	h.catPrint = print
	h.cat.Store(next)
	logProblems(&h.namingLog, h.log, "tool naming", next.issues)
	h.log.Debug("catalog rebuilt", "version", next.version, "tools", len(next.tools))
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

// progress routes an upstream's progress notification to the downstream
// request it belongs to.
func (h *Host) upstreamProgress(_ context.Context, u *upstream, p *mcp.ProgressNotificationParams) {
	t, ok := h.progressRoutes.lookup(p.ProgressToken)
	if !ok {
		return
	}
	out := *p
	out.ProgressToken = t.token
	out.Meta = nil
	h.notify(t.session, note{kind: noteProgress, ctx: t.ctx, server: u.cfg.Name, progress: &out})
}

// Close ends every upstream session and process and waits for them.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.closed.Store(true)
		var wg sync.WaitGroup
		for _, u := range h.upstreamList() {
			wg.Add(1)
			go func() { defer wg.Done(); u.close() }()
		}
		wg.Wait()
	})
	return nil
}
