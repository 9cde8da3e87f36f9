package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/internal/paramheader"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/search"
	"github.com/mcphost-project/mcphost/host/toolset"
)

// view is the catalog as one caller sees it after policies: the tools in
// order, the routes of the names they were given, and the ready-made
// tools/list answer.
type view struct {
	tools  []abi.Tool
	routes map[string]catalog.Route
	result *mcp.ListToolsResult             // what tools/list answers (run_code alone under code mode)
	exec   wire.Executions                  // the execution objects of all's tools
	all    []*mcp.Tool                      // every tool of the view, as listed, in the order of tools
	params map[string][]paramheader.Binding // x-mcp-header bindings by name, as the caller sees the tool

	scope search.ScopeCache // the view searchable (searchtools.go)

	encOnce sync.Once // the encoded result, for the tools/list shortcut (fastlist.go)
	enc     []byte
	encErr  error
	newOnce sync.Once // the same for protocol 2026-07-28 (sessionless.go)
	newEnc  []byte
	newErr  error

	// exposure ("": toolset.ExposureList) and always (exposed names) say
	// how tools/list shows the view; a toolset's sets them (toolsets.go).
	exposure string
	always   []string
	subsets  sync.Map // toolset name -> *subView, its part of this view (toolsets.go)
}

// answer is the tools/list result for req: a shallow copy of the cached
// one, because the go-sdk annotates results of newer-protocol sessions
// (result type, server info in _meta) after the handler returns, and
// sessions share the cached view; in the form req's protocol defines
// (listresult.go). private says the view depends on the caller; the
// tools' execution objects go only where tasks are offered.
func (v *view) answer(req mcp.Request, private bool, transport string) mcp.Result {
	cp := *v.result
	return catalog.ToolsAnswer(req, &cp, tasksOffered(transport, v.exec), private)
}

// tasksOffered is exec on the transport whose sessions are offered tasks
// (streamable HTTP), and nothing on the others: execution.taskSupport
// speaks of a capability that stdio and SSE sessions do not have.
func tasksOffered(transport string, exec wire.Executions) wire.Executions {
	if transport != DownstreamHTTP {
		return nil
	}
	return exec
}

// maxViews bounds the per-caller cache; past it the cache starts over, which
// costs one policy run per caller.
const maxViews = 4096

// viewCache keeps views per (catalog version, policy generation, caller),
// so policies run only when something they depend on changed. Callers that
// miss the same key at once share one computation: after a reload every
// call of a busy session misses together, and each running the listing
// policies would queue them behind each other for guest instances.
type viewCache struct {
	mu      sync.Mutex
	m       map[viewKey]*view
	pending map[viewKey]*pendingView
	// prepared is the policy generation whose views PrepareViews computed
	// before it was swapped in; clearing keeps them.
	prepared uint64
}

// pendingView is a view being computed; done is closed when v or err is set.
type pendingView struct {
	done chan struct{}
	v    *view
	err  error
}

type viewKey struct {
	catalog    uint64
	generation uint64
	caller     string
}

func (c *viewCache) init() {
	c.m = make(map[viewKey]*view)
	c.pending = make(map[viewKey]*pendingView)
}

// getOrCompute returns the view for k, computing it with compute unless it
// is cached or another caller is computing it. A failed computation is not
// cached; each caller waiting on it gets its error.
func (c *viewCache) getOrCompute(ctx context.Context, k viewKey, compute func() (*view, error)) (*view, error) {
	c.mu.Lock()
	if v := c.m[k]; v != nil {
		c.mu.Unlock()
		return v, nil
	}
	if p := c.pending[k]; p != nil {
		c.mu.Unlock()
		select {
		case <-p.done:
			return p.v, p.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p := &pendingView{done: make(chan struct{})}
	c.pending[k] = p
	c.mu.Unlock()

	p.v, p.err = compute()
	c.mu.Lock()
	delete(c.pending, k)
	if p.err == nil {
		c.storeLocked(k, p.v)
	}
	c.mu.Unlock()
	close(p.done)
	return p.v, p.err
}

func (c *viewCache) get(k viewKey) *view {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *viewCache) put(k viewKey, v *view) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storeLocked(k, v)
}

// storeLocked keeps v under k, starting over past maxViews. c.mu is held.
func (c *viewCache) storeLocked(k viewKey, v *view) {
	if len(c.m) >= maxViews {
		clear(c.m)
	}
	c.m[k] = v
}

// clear drops every view except those prepared for generation gen, which
// are current (PrepareViews computed them with the policy now serving).
func (c *viewCache) clear(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := c.prepared != 0 && c.prepared == gen
	for k := range c.m {
		if !keep || k.generation != gen {
			delete(c.m, k)
		}
	}
}

// recentCallers returns up to n callers with a view of catalog version
// cat under generation gen.
func (c *viewCache) recentCallers(cat, gen uint64, n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var callers []string
	for k := range c.m {
		if k.catalog == cat && k.generation == gen && len(callers) < n {
			callers = append(callers, k.caller)
		}
	}
	return callers
}

// maxPrepared bounds how many callers' views PrepareViews computes before a
// swap; the others are computed on their next request, as before.
const maxPrepared = 32

// PrepareViews computes, with next (a policy about to replace the current
// one, with a generation of its own), the views of up to 32 callers that
// have one now, so that calls arriving after the swap find their listing
// ready instead of waiting for the new policies to run. Callers whose
// views fail to compute get them on demand. plugins.Manager calls it
// through plugins.Listener.BeforeSwap; it is safe to call at any time.
func (h *Host) PrepareViews(ctx context.Context, next Policy) {
	if h.policy == nil || next == nil {
		return
	}
	if w, ok := next.(HookWanter); ok && !w.Wants(abi.HookToolsList) {
		return // view will not ask it for listings either
	}
	cat := h.cat.Load()
	gen := next.Generation()
	callers := h.views.recentCallers(cat.Version, h.policy.Generation(), maxPrepared)
	for _, ck := range callers {
		var caller abi.Caller
		if err := json.Unmarshal([]byte(ck), &caller); err != nil {
			continue
		}
		k := viewKey{catalog: cat.Version, generation: gen, caller: ck}
		_, err := h.views.getOrCompute(ctx, k, func() (*view, error) {
			return h.timedView(ctx, next, cat, caller)
		})
		if err != nil {
			h.log.Debug("preparing a view for the next policy generation failed; it will be computed on demand", "error", err)
		}
	}
	h.views.mu.Lock()
	h.views.prepared = gen
	h.views.mu.Unlock()
}

// view returns the caller's view of the current catalog, or of its part
// the toolset of ctx serves.
func (h *Host) view(ctx context.Context, caller abi.Caller) (*view, error) {
	v, err := h.callerView(ctx, caller)
	if err != nil {
		return nil, err
	}
	return v.in(toolset.FromContext(ctx), h.Config().Code), nil
}

func (h *Host) callerView(ctx context.Context, caller abi.Caller) (*view, error) {
	cat := h.cat.Load()
	if !h.wants(abi.HookToolsList) {
		return h.plainView(cat), nil
	}
	callerKey, err := json.Marshal(caller)
	if err != nil {
		return nil, fmt.Errorf("encoding caller: %w", err)
	}
	k := viewKey{catalog: cat.Version, generation: h.policy.Generation(), caller: string(callerKey)}
	return h.views.getOrCompute(ctx, k, func() (*view, error) {
		// The computation is shared: one caller's cancellation must not
		// fail the others, so it runs to the policies' own timeouts.
		return h.timedView(context.WithoutCancel(ctx), h.policy, cat, caller)
	})
}

// computeView runs policy's listing for caller over cat and checks it.
// timedView is computeView, told to the observer.
func (h *Host) timedView(ctx context.Context, policy Policy, cat *catalog.Catalog, caller abi.Caller) (*view, error) {
	if h.observer == nil {
		return h.computeView(ctx, policy, cat, caller)
	}
	start := time.Now()
	v, err := h.computeView(ctx, policy, cat, caller)
	h.observer.ToolsListBuilt(time.Since(start), err)
	return v, err
}

func (h *Host) computeView(ctx context.Context, policy Policy, cat *catalog.Catalog, caller abi.Caller) (*view, error) {
	tools, err := h.listTools(ctx, policy, &abi.ToolsListInput{Caller: caller, Tools: cat.Tools})
	if err != nil {
		return nil, &wire.ListingError{Msg: "tool list withheld by policy: " + wire.PolicyMessage(err), Err: err}
	}
	v, err := newView(cat, tools)
	if err != nil {
		return nil, fmt.Errorf("policy output: %w", err)
	}
	h.exposeCode(v)
	return v, nil
}

// plainView is the catalog itself, for hosts without a policy; it is built
// once per catalog version.
func (h *Host) plainView(cat *catalog.Catalog) *view {
	k := viewKey{catalog: cat.Version}
	if v := h.views.get(k); v != nil {
		return v
	}
	v, _ := newView(cat, cat.Tools)
	h.exposeCode(v)
	h.views.put(k, v)
	return v
}

// newView checks policy output against the catalog: every tool must come
// from the catalog (server and tool), and names must be valid and unique.
func newView(cat *catalog.Catalog, tools []abi.Tool) (*view, error) {
	v := &view{
		tools:  tools,
		routes: make(map[string]catalog.Route, len(tools)),
		result: &mcp.ListToolsResult{Tools: make([]*mcp.Tool, 0, len(tools))},
	}
	for i := range tools {
		t := &tools[i]
		r := catalog.Route{Server: t.Server, Tool: t.Tool}
		if _, ok := cat.ByTool[r]; !ok {
			return nil, fmt.Errorf("tool %q names server %q tool %q, which the catalog does not have", t.Name, t.Server, t.Tool)
		}
		if !abi.ValidToolName(t.Name) {
			return nil, fmt.Errorf("tool name %q is not valid (want [A-Za-z_][A-Za-z0-9_-]*)", t.Name)
		}
		if _, dup := v.routes[t.Name]; dup {
			return nil, fmt.Errorf("tool name %q is used twice", t.Name)
		}
		v.routes[t.Name] = r
		v.result.Tools = append(v.result.Tools, v.exec.Add(wire.MCPTool(t), t.Execution))
		if b, err := paramheader.Bindings(t.InputSchema); err == nil && b != nil {
			if v.params == nil {
				v.params = map[string][]paramheader.Binding{}
			}
			v.params[t.Name] = b
		}
	}
	v.all = v.result.Tools
	return v, nil
}
