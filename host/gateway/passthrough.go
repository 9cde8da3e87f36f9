package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/extensions"
	"github.com/mcphost-project/mcphost/host/toolset"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// Everything a client asks but tools passes through here: prompts and
// resources are listed from the features snapshot and routed by its
// tables; completion, logging and subscriptions go to the server that owns
// what they name. What servers send back is in backchannel.go.

// listPrompts is prompts/list: the snapshot, through the list hook.
func (h *Host) listPrompts(ctx context.Context, caller abi.Caller) (*mcp.ListPromptsResult, error) {
	f := h.feats.Load()
	prompts, err := governList(ctx, h, caller, abi.MethodPromptsList, f.PromptPrint, f.Prompts,
		func(p *mcp.Prompt) string { return f.PromptRoutes[p.Name].Server },
		func(p *mcp.Prompt) string { return p.Name },
		func(p *mcp.Prompt, name string) { p.Name = name })
	if err != nil {
		return nil, err
	}
	return &mcp.ListPromptsResult{Prompts: toolset.Keep(toolset.FromContext(ctx), h.cat.Load().ServerTools(), prompts, func(p *mcp.Prompt) string { return f.PromptRoutes[p.Name].Server })}, nil
}

func (h *Host) getPrompt(ctx context.Context, caller abi.Caller, ss *mcp.ServerSession, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	r, ok := h.feats.Load().PromptRoutes[p.Name]
	u := h.upstreamNamed(r.Server)
	if !ok || u == nil {
		return nil, unknownPrompt(p.Name)
	}
	if err := h.admit(ctx, caller, abi.MethodPromptsGet, r.Server, p.Name, p, unknownPrompt(p.Name)); err != nil {
		return nil, err
	}
	params := *p
	params.Name = r.Tool
	meta, done := h.upstreamMeta(ctx, u, ss, p.Meta)
	defer done()
	params.Meta = meta
	var res *mcp.GetPromptResult
	err := h.forward(ctx, ss, u, "prompts/get", meta, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.GetPrompt(ctx, &params)
		return err
	})
	if err != nil {
		return nil, rpcError(r.Server, err)
	}
	return governMessage(ctx, h, caller, abi.MethodPromptsGet, r.Server, p.Name, res)
}

// unknownPrompt is the answer for a prompt name nothing serves.
func unknownPrompt(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
}

// listResources is resources/list: the snapshot, through the list hook.
func (h *Host) listResources(ctx context.Context, caller abi.Caller) (*mcp.ListResourcesResult, error) {
	f := h.feats.Load()
	res, err := governList(ctx, h, caller, abi.MethodResourcesList, f.ResPrint, f.Resources,
		func(r *mcp.Resource) string { return f.ByURI[r.URI] },
		func(r *mcp.Resource) string { return r.URI },
		func(r *mcp.Resource, uri string) { r.URI = uri })
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourcesResult{Resources: toolset.Keep(toolset.FromContext(ctx), h.cat.Load().ServerTools(), res, func(r *mcp.Resource) string { return f.ByURI[r.URI] })}, nil
}

// listResourceTemplates is resources/templates/list, through the list hook.
func (h *Host) listResourceTemplates(ctx context.Context, caller abi.Caller) (*mcp.ListResourceTemplatesResult, error) {
	f := h.feats.Load()
	ts, err := governList(ctx, h, caller, abi.MethodResourceTemplatesList, f.ResPrint, f.Templates,
		func(t *mcp.ResourceTemplate) string { return f.TemplateOwner[t.URITemplate] },
		func(t *mcp.ResourceTemplate) string { return t.URITemplate },
		func(t *mcp.ResourceTemplate, tmpl string) { t.URITemplate = tmpl })
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourceTemplatesResult{ResourceTemplates: toolset.Keep(toolset.FromContext(ctx), h.cat.Load().ServerTools(), ts, func(t *mcp.ResourceTemplate) string { return f.TemplateOwner[t.URITemplate] })}, nil
}

// resourceUpstream routes a URI to its server.
func (h *Host) resourceUpstream(uri string) (*upstream.Server, error) {
	server, err := h.feats.Load().ResourceServer(uri)
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
	server := u.Config.Name
	if err := h.admit(ctx, caller, abi.MethodResourcesRead, server, p.URI, p, mcp.ResourceNotFoundError(p.URI)); err != nil {
		return nil, err
	}
	params := *p
	params.URI = extensions.UpstreamURI(server, p.URI) // ui:// URIs carry the server's name
	meta, done := h.upstreamMeta(ctx, u, ss, p.Meta)
	defer done()
	params.Meta = meta
	var res *mcp.ReadResourceResult
	err = h.forward(ctx, ss, u, "resources/read", meta, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.ReadResource(ctx, &params)
		return err
	})
	if err != nil {
		return nil, rpcError(server, err)
	}
	extensions.ExposeContents(server, res)
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
	if err := h.admit(ctx, h.requestCaller(req), abi.MethodResourcesSubscribe, u.Config.Name, uri, req.Params, mcp.ResourceNotFoundError(uri)); err != nil {
		return err
	}
	exposed, uri := uri, extensions.UpstreamURI(u.Config.Name, uri)
	if u.PerClient() {
		// An identity's sessions share its upstream session: it is
		// subscribed once per URI, and unsubscribed when the last leaves.
		err := h.forward(ctx, ss, u, "resources/subscribe", nil, func(ctx context.Context, cs *mcp.ClientSession) error {
			return u.SubscribeOn(cs, ss, uri, true, func() error {
				return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
			})
		})
		if err != nil {
			return rpcError(u.Config.Name, err)
		}
		return nil
	}
	if !h.sessions.addSub(ss, exposed, u.Config.Name) {
		return nil // this client already subscribed
	}
	if u.AddSub(uri) {
		err := h.forward(ctx, ss, u, "resources/subscribe", nil, func(ctx context.Context, cs *mcp.ClientSession) error {
			return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		})
		if err != nil {
			u.DropSub(uri)
			h.sessions.dropSub(ss, exposed)
			return rpcError(u.Config.Name, err)
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
	if !u.PerClient() {
		return nil // never subscribed
	}
	uri = extensions.UpstreamURI(u.Config.Name, uri)
	err = h.forward(ctx, ss, u, "resources/unsubscribe", nil, func(ctx context.Context, cs *mcp.ClientSession) error {
		// Upstream only when no other session of the client still wants it.
		return u.SubscribeOn(cs, ss, uri, false, func() error {
			return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		})
	})
	if err != nil {
		return rpcError(u.Config.Name, err)
	}
	return nil
}

// releaseSub drops one client's interest in a shared subscription and
// unsubscribes upstream when it was the last.
func (h *Host) releaseSub(ctx context.Context, ss *mcp.ServerSession, server, uri string) {
	uri = extensions.UpstreamURI(server, uri)
	u := h.upstreamNamed(server)
	if u == nil || !u.DropSub(uri) {
		return
	}
	cs := u.LiveSession()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, u.Config.Timeout)
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
	var u *upstream.Server
	name := ref.Name
	notFound := unknownPrompt(ref.Name)
	switch ref.Type {
	case "ref/prompt":
		r, ok := f.PromptRoutes[ref.Name]
		if u = h.upstreamNamed(r.Server); !ok || u == nil {
			return nil, notFound
		}
		ref.Name = r.Tool
	case "ref/resource":
		server, ok := f.TemplateOwner[ref.URI]
		if !ok {
			var err error
			if server, err = f.ResourceServer(ref.URI); err != nil {
				return nil, err
			}
		}
		if u = h.upstreamNamed(server); u == nil {
			return nil, mcp.ResourceNotFoundError(ref.URI)
		}
		name, notFound = ref.URI, mcp.ResourceNotFoundError(ref.URI)
		ref.URI = extensions.UpstreamURI(server, ref.URI)
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", ref.Type)}
	}
	caller := h.requestCaller(req)
	if err := h.admit(ctx, caller, abi.MethodComplete, u.Config.Name, name, req.Params, notFound); err != nil {
		return nil, err
	}
	meta, done := h.upstreamMeta(ctx, u, req.Session, p.Meta)
	defer done()
	p.Meta = meta
	var res *mcp.CompleteResult
	err := h.forward(ctx, req.Session, u, "completion/complete", meta, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.Complete(ctx, &p)
		return err
	})
	if err != nil {
		return nil, rpcError(u.Config.Name, err)
	}
	return governMessage(ctx, h, caller, abi.MethodComplete, u.Config.Name, name, res)
}

// setLevel forwards logging/setLevel. A per-client session gets its
// client's level; a shared session gets the most verbose level any client
// asked for, and each client's own level filters what it is sent.
func (h *Host) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	h.sessions.setLevel(ss, level)
	for _, u := range h.upstreamList() {
		if caps := u.Capabilities(); caps == nil || caps.Logging == nil {
			continue
		}
		if u.PerClient() {
			if _, cs := u.ClientOf(ss); cs != nil {
				h.setUpstreamLevel(ctx, u, cs, level)
			}
			continue
		}
		want := h.sessions.mostVerbose()
		if !u.SetSharedLevel(want) {
			continue
		}
		if cs := u.LiveSession(); cs != nil {
			h.setUpstreamLevel(ctx, u, cs, want)
		}
	}
}

func (h *Host) setUpstreamLevel(ctx context.Context, u *upstream.Server, cs *mcp.ClientSession, level mcp.LoggingLevel) {
	ctx, cancel := context.WithTimeout(ctx, u.Config.Timeout)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		h.log.Debug("forwarding log level failed", "server", u.Config.Name, "error", err)
	}
}

// ClientSessionStarted gives a new per-client session its client's log level.
func (h *Host) ClientSessionStarted(ctx context.Context, u *upstream.Server, owner *mcp.ServerSession, cs *mcp.ClientSession) {
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
		if u.PerClient() {
			if c, _ := u.ClientOf(ss); c != nil {
				c.AddRoots(markerRoot)
			}
			continue
		}
		u.SharedClient().AddRoots(markerRoot)
	}
}

// markerRoot is added to upstream clients only to make the go-sdk send
// notifications/roots/list_changed; roots/list is answered downstream.
var markerRoot = &mcp.Root{URI: "mcphost:roots", Name: "mcphost"}

// FeaturesChanged rebuilds the prompts and resources snapshot and tells
// clients what changed.
func (h *Host) FeaturesChanged(string) {
	h.featMu.Lock()
	defer h.featMu.Unlock()
	h.upMu.RLock()
	ups, tcfg, rcfg := h.upstreams, h.cfg.Tools, h.cfg.Resources
	h.upMu.RUnlock()
	sfs := make([]upstream.ServerFeatures, len(ups))
	for i, u := range ups {
		sfs[i] = u.CachedFeatures()
	}
	old := h.feats.Load()
	next := catalog.BuildFeatures(tcfg, rcfg, sfs)
	h.feats.Store(next)
	catalog.LogProblems(&h.featuresLog, h.log, "prompts and resources", next.Issues)
	if next.PromptPrint != old.PromptPrint {
		h.servers.promptsChanged()
	}
	if next.ResPrint != old.ResPrint {
		h.servers.resourcesChanged()
	}
}

// capabilities is what the gateway offers downstream: tools always, the
// union of what the upstreams offer, and their extensions as
// host/extensions merges them.
func (h *Host) capabilities() *mcp.ServerCapabilities {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	var exts []map[string]any
	for _, u := range h.upstreamList() {
		c := u.Capabilities()
		if c == nil {
			continue
		}
		exts = append(exts, c.Extensions)
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
	caps.Extensions = extensions.ForClients(exts)
	return caps
}
