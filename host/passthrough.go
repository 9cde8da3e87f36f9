package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
)

// Everything but tools passes through here: prompts and resources are
// listed from the features snapshot and routed by its tables; completion,
// logging and subscriptions go to the server that owns what they name; what
// a server sends back (logs, resource updates, sampling, elicitation, roots)
// goes to the downstream client it belongs to.

// forward runs fn against the session that serves ss on u (shared, or ss's
// own with sessions = "per_client"), under the server's call timeout, and
// records the call so that what the server sends during it finds ss.
func (h *Host) forward(ctx context.Context, ss *mcp.ServerSession, u *upstream, fn func(context.Context, *mcp.ClientSession) error) error {
	u.acquire()
	defer u.release()
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	cs, done, err := u.sessionFor(ctx, ss)
	if err != nil {
		return err
	}
	defer done()
	if ss != nil {
		defer h.calls.enter(cs, ss, ctx)()
	}
	err = fn(ctx, cs)
	if transportFailed(err) {
		u.lost(cs, err) // do not hand the dead session to the next call
	}
	return err
}

// codeRejectedByTransport is the go-sdk's JSON-RPC code for a message its
// transport could not deliver.
const codeRejectedByTransport = -32005

// transportFailed reports whether err says the connection to an upstream
// is gone, rather than that the server answered with an error or the call
// ran out of time: a closed connection, or, over HTTP, a request that
// could not reach the server at all.
func transportFailed(err error) bool {
	if err == nil {
		return false
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		// The go-sdk's HTTP client reports a request it could not deliver
		// (connection refused, session gone) as this code.
		return werr.Code == codeRejectedByTransport
	}
	var op *net.OpError
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.As(err, &op) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// upstreamMeta copies a request's _meta for the upstream, replacing a
// progress token with one that routes progress back to ss.
func (h *Host) upstreamMeta(ctx context.Context, ss *mcp.ServerSession, meta mcp.Meta) (mcp.Meta, func()) {
	if len(meta) == 0 {
		return nil, func() {}
	}
	out := make(mcp.Meta, len(meta))
	for k, v := range meta {
		out[k] = v
	}
	token, ok := meta["progressToken"]
	if !ok {
		return out, func() {}
	}
	if ss == nil || token == nil {
		delete(out, "progressToken")
		return out, func() {}
	}
	up, done := h.progressRoutes.register(ctx, ss, token)
	out["progressToken"] = up
	return out, done
}

// rpcError turns a routing or upstream failure into the JSON-RPC error the
// client sees; an upstream's own JSON-RPC error passes through as it is.
func rpcError(server string, err error) error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("server %q: %s", server, errorText(err))}
}

// listPrompts is prompts/list: the snapshot, through the list hook.
func (h *Host) listPrompts(ctx context.Context, caller abi.Caller) (*mcp.ListPromptsResult, error) {
	f := h.feats.Load()
	prompts, err := governList(ctx, h, caller, abi.MethodPromptsList, f.promptPrint, f.prompts,
		func(p *mcp.Prompt) string { return f.promptRoutes[p.Name].server },
		func(p *mcp.Prompt) string { return p.Name },
		func(p *mcp.Prompt, name string) { p.Name = name })
	if err != nil {
		return nil, err
	}
	return &mcp.ListPromptsResult{Prompts: prompts}, nil
}

func (h *Host) getPrompt(ctx context.Context, caller abi.Caller, ss *mcp.ServerSession, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	r, ok := h.feats.Load().promptRoutes[p.Name]
	u := h.upstreamNamed(r.server)
	if !ok || u == nil {
		return nil, unknownPrompt(p.Name)
	}
	if err := h.admit(ctx, caller, abi.MethodPromptsGet, r.server, p.Name, p, unknownPrompt(p.Name)); err != nil {
		return nil, err
	}
	params := *p
	params.Name = r.tool
	meta, done := h.upstreamMeta(ctx, ss, p.Meta)
	defer done()
	params.Meta = meta
	var res *mcp.GetPromptResult
	err := h.forward(ctx, ss, u, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.GetPrompt(ctx, &params)
		return err
	})
	if err != nil {
		return nil, rpcError(r.server, err)
	}
	return governMessage(ctx, h, caller, abi.MethodPromptsGet, r.server, p.Name, res)
}

// unknownPrompt is the answer for a prompt name nothing serves.
func unknownPrompt(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
}

// listResources is resources/list: the snapshot, through the list hook.
func (h *Host) listResources(ctx context.Context, caller abi.Caller) (*mcp.ListResourcesResult, error) {
	f := h.feats.Load()
	res, err := governList(ctx, h, caller, abi.MethodResourcesList, f.resPrint, f.resources,
		func(r *mcp.Resource) string { return f.byURI[r.URI] },
		func(r *mcp.Resource) string { return r.URI },
		func(r *mcp.Resource, uri string) { r.URI = uri })
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourcesResult{Resources: res}, nil
}

// listResourceTemplates is resources/templates/list, through the list hook.
func (h *Host) listResourceTemplates(ctx context.Context, caller abi.Caller) (*mcp.ListResourceTemplatesResult, error) {
	f := h.feats.Load()
	ts, err := governList(ctx, h, caller, abi.MethodResourceTemplatesList, f.resPrint, f.templates,
		func(t *mcp.ResourceTemplate) string { return f.templateOwner[t.URITemplate] },
		func(t *mcp.ResourceTemplate) string { return t.URITemplate },
		func(t *mcp.ResourceTemplate, tmpl string) { t.URITemplate = tmpl })
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourceTemplatesResult{ResourceTemplates: ts}, nil
}

// resourceUpstream routes a URI to its server.
func (h *Host) resourceUpstream(uri string) (*upstream, error) {
	server, err := h.feats.Load().resourceServer(uri)
	if err != nil {
		return nil, err
	}
	u := h.upstreamNamed(server)
	if u == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return u, nil
}

func (h *Host) readResource(ctx context.Context, caller abi.Caller, ss *mcp.ServerSession, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	u, err := h.resourceUpstream(p.URI)
	if err != nil {
		return nil, err
	}
	server := u.cfg.Name
	if err := h.admit(ctx, caller, abi.MethodResourcesRead, server, p.URI, p, mcp.ResourceNotFoundError(p.URI)); err != nil {
		return nil, err
	}
	params := *p
	meta, done := h.upstreamMeta(ctx, ss, p.Meta)
	defer done()
	params.Meta = meta
	var res *mcp.ReadResourceResult
	err = h.forward(ctx, ss, u, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.ReadResource(ctx, &params)
		return err
	})
	if err != nil {
		return nil, rpcError(server, err)
	}
	return governMessage(ctx, h, caller, abi.MethodResourcesRead, server, p.URI, res)
}

// subscribe forwards resources/subscribe. A shared session is subscribed
// once per URI however many clients ask (and unsubscribed when the last
// one leaves); the go-sdk server records which downstream sessions asked,
// and delivers updates to them.
func (h *Host) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	u, err := h.resourceUpstream(uri)
	if err != nil {
		return err
	}
	ss := req.Session
	if err := h.admit(ctx, h.requestCaller(req), abi.MethodResourcesSubscribe, u.cfg.Name, uri, req.Params, mcp.ResourceNotFoundError(uri)); err != nil {
		return err
	}
	if u.cfg.Sessions == SessionsPerClient {
		err := h.forward(ctx, ss, u, func(ctx context.Context, cs *mcp.ClientSession) error {
			return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		})
		if err != nil {
			return rpcError(u.cfg.Name, err)
		}
		return nil
	}
	if !h.sessions.addSub(ss, uri, u.cfg.Name) {
		return nil // this client already subscribed
	}
	if u.addSub(uri) {
		err := h.forward(ctx, ss, u, func(ctx context.Context, cs *mcp.ClientSession) error {
			return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		})
		if err != nil {
			u.dropSub(uri)
			h.sessions.dropSub(ss, uri)
			return rpcError(u.cfg.Name, err)
		}
	}
	return nil
}

func (h *Host) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	ss := req.Session
	if server, ok := h.sessions.dropSub(ss, uri); ok {
		h.releaseSub(ctx, ss, server, uri)
		return nil
	}
	u, err := h.resourceUpstream(uri)
	if err != nil {
		return err
	}
	if u.cfg.Sessions != SessionsPerClient {
		return nil // never subscribed
	}
	err = h.forward(ctx, ss, u, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	if err != nil {
		return rpcError(u.cfg.Name, err)
	}
	return nil
}

// releaseSub drops one client's interest in a shared subscription and
// unsubscribes upstream when it was the last.
func (h *Host) releaseSub(ctx context.Context, ss *mcp.ServerSession, server, uri string) {
	u := h.upstreamNamed(server)
	if u == nil || !u.dropSub(uri) {
		return
	}
	cs := u.liveSession()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		h.log.Debug("unsubscribing upstream failed", "server", server, "uri", uri, "error", err)
	}
}

// complete routes completion/complete by the prompt or resource it names.
func (h *Host) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := *req.Params
	ref := *p.Ref
	p.Ref = &ref
	f := h.feats.Load()
	var u *upstream
	name := ref.Name
	notFound := unknownPrompt(ref.Name)
	switch ref.Type {
	case "ref/prompt":
		r, ok := f.promptRoutes[ref.Name]
		if u = h.upstreamNamed(r.server); !ok || u == nil {
			return nil, notFound
		}
		ref.Name = r.tool
	case "ref/resource":
		server, ok := f.templateOwner[ref.URI]
		if !ok {
			var err error
			if server, err = f.resourceServer(ref.URI); err != nil {
				return nil, err
			}
		}
		if u = h.upstreamNamed(server); u == nil {
			return nil, mcp.ResourceNotFoundError(ref.URI)
		}
		name, notFound = ref.URI, mcp.ResourceNotFoundError(ref.URI)
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", ref.Type)}
	}
	caller := h.requestCaller(req)
	if err := h.admit(ctx, caller, abi.MethodComplete, u.cfg.Name, name, req.Params, notFound); err != nil {
		return nil, err
	}
	meta, done := h.upstreamMeta(ctx, req.Session, p.Meta)
	defer done()
	p.Meta = meta
	var res *mcp.CompleteResult
	err := h.forward(ctx, req.Session, u, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.Complete(ctx, &p)
		return err
	})
	if err != nil {
		return nil, rpcError(u.cfg.Name, err)
	}
	return governMessage(ctx, h, caller, abi.MethodComplete, u.cfg.Name, name, res)
}

// setLevel forwards logging/setLevel. A per-client session gets its
// client's level; a shared session gets the most verbose level any client
// asked for, and each client's own level filters what it is sent.
func (h *Host) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	h.sessions.setLevel(ss, level)
	for _, u := range h.upstreamList() {
		if caps := u.capabilities(); caps == nil || caps.Logging == nil {
			continue
		}
		if u.cfg.Sessions == SessionsPerClient {
			if _, cs := u.clientOf(ss); cs != nil {
				h.setUpstreamLevel(ctx, u, cs, level)
			}
			continue
		}
		want := h.sessions.mostVerbose()
		if !u.setSharedLevel(want) {
			continue
		}
		if cs := u.liveSession(); cs != nil {
			h.setUpstreamLevel(ctx, u, cs, want)
		}
	}
}

func (h *Host) setUpstreamLevel(ctx context.Context, u *upstream, cs *mcp.ClientSession, level mcp.LoggingLevel) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		h.log.Debug("forwarding log level failed", "server", u.cfg.Name, "error", err)
	}
}

// clientSessionStarted gives a new per-client session its client's log level.
func (h *Host) clientSessionStarted(ctx context.Context, u *upstream, owner *mcp.ServerSession, cs *mcp.ClientSession) {
	level := h.sessions.level(owner)
	if level == "" {
		return
	}
	if res := cs.InitializeResult(); res == nil || res.Capabilities == nil || res.Capabilities.Logging == nil {
		return
	}
	h.setUpstreamLevel(ctx, u, cs, level)
}

// rootsChanged tells the upstream sessions that serve ss that its roots
// changed: its per-client sessions, and every shared session.
func (h *Host) rootsChanged(ss *mcp.ServerSession) {
	for _, u := range h.upstreamList() {
		if u.cfg.Sessions == SessionsPerClient {
			if c, _ := u.clientOf(ss); c != nil {
				c.AddRoots(markerRoot)
			}
			continue
		}
		u.client.AddRoots(markerRoot)
	}
}

// markerRoot is added to upstream clients only to make the go-sdk send
// notifications/roots/list_changed; roots/list is answered downstream.
var markerRoot = &mcp.Root{URI: "mcphost:roots", Name: "mcphost"}

// featuresChanged rebuilds the prompts and resources snapshot and tells
// clients what changed.
func (h *Host) featuresChanged(string) {
	h.featMu.Lock()
	defer h.featMu.Unlock()
	h.upMu.RLock()
	ups, tcfg, rcfg := h.upstreams, h.cfg.Tools, h.cfg.Resources
	h.upMu.RUnlock()
	sfs := make([]serverFeatures, len(ups))
	for i, u := range ups {
		sfs[i] = u.cachedFeatures()
	}
	old := h.feats.Load()
	next := buildFeatures(tcfg, rcfg, sfs)
	h.feats.Store(next)
	logProblems(&h.featuresLog, h.log, "prompts and resources", next.issues)
	if next.promptPrint != old.promptPrint {
		h.servers.promptsChanged()
	}
	if next.resPrint != old.resPrint {
		h.servers.resourcesChanged()
	}
}

// capabilities is what the gateway offers downstream: tools always, and
// the union of what the upstreams offer.
func (h *Host) capabilities() *mcp.ServerCapabilities {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	for _, u := range h.upstreamList() {
		c := u.capabilities()
		if c == nil {
			continue
		}
		if c.Prompts != nil {
			caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		}
		if c.Resources != nil {
			if caps.Resources == nil {
				caps.Resources = &mcp.ResourceCapabilities{ListChanged: true}
			}
			caps.Resources.Subscribe = caps.Resources.Subscribe || c.Resources.Subscribe
		}
		if c.Completions != nil {
			caps.Completions = &mcp.CompletionCapabilities{}
		}
		if c.Logging != nil {
			caps.Logging = &mcp.LoggingCapabilities{}
		}
	}
	return caps
}

// callRegistry records which downstream session each upstream request in
// flight came from, per upstream session, so that what a server sends
// during a call can be routed to the caller.
type callRegistry struct {
	mu sync.Mutex
	m  map[*mcp.ClientSession][]*inflightCall
}

type inflightCall struct {
	ss  *mcp.ServerSession
	ctx context.Context // the downstream handler's: messages sent with it go on the call's stream
}

func (r *callRegistry) enter(cs *mcp.ClientSession, ss *mcp.ServerSession, ctx context.Context) func() {
	c := &inflightCall{ss: ss, ctx: ctx}
	r.mu.Lock()
	if r.m == nil {
		r.m = make(map[*mcp.ClientSession][]*inflightCall)
	}
	r.m[cs] = append(r.m[cs], c)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		calls := r.m[cs]
		for i, c2 := range calls {
			if c2 == c {
				calls = append(calls[:i:i], calls[i+1:]...)
				break
			}
		}
		if len(calls) == 0 {
			delete(r.m, cs)
		} else {
			r.m[cs] = calls
		}
	}
}

// caller returns the downstream session with calls in flight on cs and the
// context of its latest call, when exactly one session has; n is how many
// distinct sessions have.
func (r *callRegistry) caller(cs *mcp.ClientSession, only *mcp.ServerSession) (ss *mcp.ServerSession, ctx context.Context, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[*mcp.ServerSession]bool{}
	for _, c := range r.m[cs] {
		if only != nil && c.ss != only {
			continue
		}
		if !seen[c.ss] {
			seen[c.ss] = true
		}
		ss, ctx = c.ss, c.ctx
	}
	if len(seen) != 1 {
		return nil, nil, len(seen)
	}
	return ss, ctx, 1
}

// clientFor picks the downstream session (and the context to send with)
// for something cs sent: a per-client session's owner, or in shared mode
// the one client with calls in flight on it.
func (h *Host) clientFor(u *upstream, cs *mcp.ClientSession, what string) (*mcp.ServerSession, context.Context, error) {
	if owner := u.ownerOf(cs); owner != nil {
		if _, ctx, n := h.calls.caller(cs, owner); n == 1 {
			return owner, ctx, nil
		}
		return owner, context.Background(), nil
	}
	ss, ctx, n := h.calls.caller(cs, nil)
	switch n {
	case 1:
		return ss, ctx, nil
	case 0:
		return nil, nil, fmt.Errorf("mcphost: server %q sent %s with no downstream request in flight to answer it", u.cfg.Name, what)
	}
	return nil, nil, fmt.Errorf("mcphost: server %q sent %s while %d clients have requests in flight on its shared session, so which client it is for is ambiguous; set sessions = %q on the server to route it", u.cfg.Name, what, n, SessionsPerClient)
}

// serverRequest answers a server-to-client request by asking the
// downstream client it belongs to, with the context of that client's call
// in flight (so a streamable HTTP client gets it on the call's stream).
func (h *Host) serverRequest(ctx context.Context, u *upstream, cs *mcp.ClientSession, method string, req mcp.Request) (mcp.Result, error) {
	ss, callCtx, err := h.clientFor(u, cs, method)
	if err != nil {
		// Servers ask at every connect (roots/list, before any client
		// call): said once per server and method, then at debug.
		if h.refusedLog.once(u.cfg.Name + "\x00" + method) {
			h.log.Warn("server-to-client request refused (said once per server and method)", "server", u.cfg.Name, "method", method, "error", err)
		} else {
			h.log.Debug("server-to-client request refused", "server", u.cfg.Name, "method", method, "error", err)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
	}
	// What an upstream asks of a client goes through the request hook (a
	// policy may refuse it) and, where it carries text the client shows or
	// hands to its model, the message hook.
	caller, server := sessionCaller(ss, h.transportOf(ss)), u.cfg.Name
	if err := h.admit(ctx, caller, method, server, "", req.GetParams(), nil); err != nil {
		h.log.Info("server-to-client request refused by policy", "server", server, "method", method, "error", err)
		return nil, err
	}
	// The downstream request ends when the upstream cancels its request too.
	dctx, cancel := context.WithCancel(callCtx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	var res mcp.Result
	switch r := req.(type) {
	case *mcp.CreateMessageWithToolsRequest:
		p, gerr := governMessage(ctx, h, caller, method, server, "", r.Params)
		if gerr != nil {
			return nil, gerr
		}
		res, err = ss.CreateMessageWithTools(dctx, p)
	case *mcp.ElicitRequest:
		p, gerr := governMessage(ctx, h, caller, method, server, "", r.Params)
		if gerr != nil {
			return nil, gerr
		}
		if p != nil && p.ElicitationID != "" {
			h.elicitations.put(p.ElicitationID, ss)
		}
		res, err = ss.Elicit(dctx, p)
	case *mcp.ListRootsRequest:
		res, err = ss.ListRoots(dctx, r.Params)
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("mcphost does not forward %s", method)}
	}
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return nil, werr
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("downstream client: %v", err)}
	}
	return res, nil
}

// upstreamLog forwards a server's log message to the client it belongs to:
// a per-client session's owner; on a shared session the one client with a
// call in flight, else every client that set a log level. Each client's own
// level filters what it is sent.
func (h *Host) upstreamLog(u *upstream, cs *mcp.ClientSession, p *mcp.LoggingMessageParams) {
	out := *p
	if out.Logger == "" {
		out.Logger = u.cfg.Name
	}
	// Queued, never written here: this runs on the upstream's read loop,
	// which a client that does not read must not hold up (outbox.go).
	if ss, ctx, err := h.clientFor(u, cs, "a log message"); err == nil {
		h.notify(ss, note{kind: noteLog, ctx: ctx, server: u.cfg.Name, log: &out})
		return
	}
	for _, ss := range h.sessions.logging() {
		h.notify(ss, note{kind: noteLog, ctx: context.Background(), server: u.cfg.Name, log: &out})
	}
}

// resourceUpdated forwards notifications/resources/updated to the clients
// subscribed to the URI; from a per-client session, only to its owner.
func (h *Host) resourceUpdated(u *upstream, cs *mcp.ClientSession, p *mcp.ResourceUpdatedNotificationParams) {
	out := *p
	if owner := u.ownerOf(cs); owner != nil {
		meta := make(mcp.Meta, len(p.Meta)+1)
		for k, v := range p.Meta {
			meta[k] = v
		}
		meta[deliverToKey] = h.sessions.id(owner)
		out.Meta = meta
	}
	h.servers.resourceUpdated(&out)
}

// elicitationComplete forwards notifications/elicitation/complete to the
// client that was sent the URL elicitation.
func (h *Host) elicitationComplete(u *upstream, cs *mcp.ClientSession, p *mcp.ElicitationCompleteParams) {
	ss := h.elicitations.take(p.ElicitationID)
	if ss == nil {
		ss = u.ownerOf(cs)
	}
	if ss == nil {
		h.log.Debug("elicitation completion for an unknown elicitation dropped", "server", u.cfg.Name, "id", p.ElicitationID)
		return
	}
	h.notify(ss, note{kind: noteElicitationComplete, ctx: context.Background(), send: func(ctx context.Context, _ note) error {
		return ss.NotifyElicitationComplete(ctx, p)
	}})
}

// elicitationRoutes remembers which client was sent each URL elicitation,
// until its completion arrives or the client goes away. It is bounded.
type elicitationRoutes struct {
	mu sync.Mutex
	m  map[string]*mcp.ServerSession
}

const maxElicitations = 4096

func (r *elicitationRoutes) put(id string, ss *mcp.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxElicitations {
		r.m = make(map[string]*mcp.ServerSession)
	}
	r.m[id] = ss
}

func (r *elicitationRoutes) take(id string) *mcp.ServerSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	ss := r.m[id]
	delete(r.m, id)
	return ss
}

func (r *elicitationRoutes) forget(ss *mcp.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, s := range r.m {
		if s == ss {
			delete(r.m, id)
		}
	}
}
