package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/internal/outbox"
	"github.com/mcphost-project/mcphost/host/internal/paramheader"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/search"
	"github.com/mcphost-project/mcphost/host/sessionless"
	"github.com/mcphost-project/mcphost/host/tasks"
	"github.com/mcphost-project/mcphost/host/toolset"
)

// Downstream transports, as policies see them in Caller.Transport.
const (
	DownstreamStdio    = "stdio"
	DownstreamHTTP     = "http"
	DownstreamSSE      = "sse"
	DownstreamEmbedded = "embedded"
)

// markerTool is registered on every downstream mcp.Server but never listed
// or called (the middleware answers tools/list and tools/call). Re-adding it
// is the go-sdk's only public way to send notifications/tools/list_changed
// to every session, debounced.
var markerTool = &mcp.Tool{Name: "_mcphost_catalog", InputSchema: json.RawMessage(`{"type":"object"}`)}

// serverSet is the downstream servers, one per transport, so policies learn
// which transport a caller came by.
type serverSet struct {
	mu      sync.Mutex
	servers []*mcp.Server
}

func (s *serverSet) add(srv *mcp.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers = append(s.servers, srv)
}

func (s *serverSet) list() []*mcp.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*mcp.Server(nil), s.servers...)
}

// toolsChanged sends notifications/tools/list_changed to every session.
func (s *serverSet) toolsChanged() {
	for _, srv := range s.list() {
		srv.AddTool(markerTool, noopTool)
	}
}

// promptsChanged and resourcesChanged do the same for prompts and
// resources, with marker features that the middleware never lists.
func (s *serverSet) promptsChanged() {
	for _, srv := range s.list() {
		srv.AddPrompt(markerPrompt, noopPrompt)
	}
}

func (s *serverSet) resourcesChanged() {
	for _, srv := range s.list() {
		srv.AddResource(markerResource, noopResource)
	}
}

// resourceUpdated sends notifications/resources/updated to every session
// subscribed to the URI (the go-sdk keeps the subscriptions).
func (s *serverSet) resourceUpdated(p *mcp.ResourceUpdatedNotificationParams) {
	for _, srv := range s.list() {
		_ = srv.ResourceUpdated(context.Background(), p)
	}
}

var (
	markerPrompt   = &mcp.Prompt{Name: "_mcphost_prompts"}
	markerResource = &mcp.Resource{Name: "_mcphost_resources", URI: "mcphost:resources"}
)

func noopTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("unreachable")
}

func noopPrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errors.New("unreachable")
}

func noopResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errors.New("unreachable")
}

// deliverToKey marks a resource update meant for some downstream sessions
// (the ids of those a per-client upstream session serves); the sending
// middleware drops it for every other session and strips the key.
const deliverToKey = "mcphost/deliverTo"

// fromKey names the upstream that sent a resource update, for policies;
// the sending middleware strips it too.
const fromKey = "mcphost/from"

func (h *Host) send() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		h.sendNext.CompareAndSwap(nil, &next) // the go-sdk's own: the same for every server
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "notifications/resources/updated" {
				return next(ctx, method, req)
			}
			p, ok := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if !ok || p == nil || ss == nil {
				return next(ctx, method, req)
			}
			if to, ok := p.Meta[deliverToKey].([]string); ok && !slices.Contains(to, h.sessions.id(ss)) {
				return nil, nil
			}
			// A copy: the go-sdk reuses the _meta map for the next session
			// (it stamps each one's subscription id) while this one waits.
			out := *p
			out.Meta = nil
			for k, v := range p.Meta {
				if k == deliverToKey || k == fromKey {
					continue
				}
				if out.Meta == nil {
					out.Meta = make(mcp.Meta, len(p.Meta))
				}
				out.Meta[k] = v
			}
			// The go-sdk writes an update to each subscribed session in
			// turn, on the upstream's notification handler: queued here, a
			// client that stopped reading holds up neither (outbox.go).
			from, _ := p.Meta[fromKey].(string)
			h.notify(ss, outbox.Note{Kind: outbox.NoteResourceUpdated, Ctx: context.Background(), Server: from, Updated: &out, Send: func(ctx context.Context, n outbox.Note) error {
				_, err := next(ctx, method, &mcp.ServerRequest[*mcp.ResourceUpdatedNotificationParams]{Session: ss, Params: n.Updated})
				return err
			}})
			return nil, nil
		}
	}
}

// MCPServer returns a new downstream MCP server backed by this host, for a
// transport label (DownstreamHTTP, DownstreamStdio, ...). Embedders can
// connect it to any go-sdk transport. A tools/call result it returns is not
// always a *mcp.CallToolResult: one passed on as the upstream sent it is a
// type that only encodes (rawcall.go), so middleware an embedder adds
// around it should read results as JSON, or call Host.CallTool, which
// always returns typed results.
func (h *Host) MCPServer(transport string) *mcp.Server { return h.newServer(transport, "") }

// newServer is MCPServer for the endpoint of the toolset named ts ("":
// /mcp).
func (h *Host) newServer(transport, ts string) *mcp.Server {
	srv := mcp.NewServer(serverImpl, &mcp.ServerOptions{
		Capabilities:       &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		SubscribeHandler:   h.subscribe,
		UnsubscribeHandler: h.unsubscribe,
		CompletionHandler:  h.complete,
		RootsListChangedHandler: func(_ context.Context, req *mcp.RootsListChangedRequest) {
			h.rootsChanged(req.Session)
		},
	})
	srv.AddTool(markerTool, noopTool)
	srv.AddPrompt(markerPrompt, noopPrompt)
	srv.AddResource(markerResource, noopResource)
	srv.AddReceivingMiddleware(h.receive(transport, ts))
	srv.AddSendingMiddleware(h.send())
	h.servers.add(srv)
	return srv
}

// receive is the downstream seam: tools/list and tools/call are answered
// from the catalog through the policy; prompts and resources from the
// features snapshot and their routes; initialize gets the union of the
// upstreams' capabilities; the rest goes to the go-sdk server, whose
// handlers (subscribe, completion, roots) forward what needs forwarding.
func (h *Host) receive(transport, ts string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			if ts != "" {
				if ctx, err = toolset.Enter(ctx, h.Config().Toolsets, ts); err != nil {
					return nil, err
				}
			}
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if h.tracer != nil {
				// Ended last, so that it sees a recovered panic's error.
				var span trace.Span
				ctx, span = h.requestSpan(ctx, method, req, ss)
				defer func() { endRequestSpan(span, res, err) }()
			}
			// The go-sdk runs handlers on their own goroutines without
			// recovering: a panic here would end the whole host.
			defer func() {
				if p := recover(); p != nil {
					res, err = nil, h.panicked(method, p)
				}
			}()
			var d *downstream
			// A client's server/discover gets a session of its own that
			// ends with it: not worth tracking, nor counting against
			// listen.max_sessions while it ends.
			if method != "server/discover" {
				d = h.trackSession(ctx, ss, transport, h.identityOf(ctx, req, transport))
				h.sessionlessLevel(ctx, d, ss, req)
			}
			if transport == DownstreamHTTP && ss != nil && ts == "" {
				h.fastSessions.seen(ss, method)
				if method == "notifications/cancelled" {
					h.cancelFastCall(ss, req)
				}
			}
			res, err = h.route(ctx, transport, method, req, ss, next)
			res = sessionless.Complete(method, req, res)
			if d != nil {
				// What the upstream sent during the call goes out first.
				d.out.Flush(ctx)
			}
			return res, err
		}
	}
}

// panicked logs a panic recovered while handling a request for method and
// returns the JSON-RPC error its client is answered with.
func (h *Host) panicked(method string, p any) *jsonrpc.Error {
	h.log.Error("panic handling request", "method", method, "panic", p, "stack", string(debug.Stack()))
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error handling " + method}
}

// route answers one downstream request (receive's switch).
func (h *Host) route(ctx context.Context, transport, method string, req mcp.Request, ss *mcp.ServerSession, next mcp.MethodHandler) (mcp.Result, error) {
	switch method {
	case "initialize", "server/discover":
		res, err := next(ctx, method, req)
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Capabilities = h.capabilities()
			return tasks.WithCapability(r, transport == DownstreamHTTP), err
		case *mcp.DiscoverResult:
			r.Capabilities = tasks.WithExtension(h.capabilities(), transport == DownstreamHTTP)
		}
		return res, err
	case "prompts/list", "resources/list", "resources/templates/list":
		var res mcp.Result
		var err error
		caller := h.callerOf(req, transport)
		switch method {
		case "prompts/list":
			res, err = h.listPrompts(ctx, caller)
		case "resources/list":
			res, err = h.listResources(ctx, caller)
		default:
			res, err = h.listResourceTemplates(ctx, caller)
		}
		if err != nil {
			return nil, err
		}
		return catalog.ListAnswer(req, res, h.wantsMethod(abi.HookList, method)), nil
	case "prompts/get":
		r, ok := req.(*mcp.GetPromptRequest)
		if !ok || r.Params == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get: missing params"}
		}
		caller := h.callerOf(req, transport)
		if usesRounds(ss) {
			p := *r.Params
			p.InputResponses, p.RequestState = nil, "" // the client's to mcphost, not the upstream's
			return h.inRounds(ctx, ss, caller, h.identityOf(ctx, req, transport).Key(), sessionless.RoundKey(method, p.Name), p.Arguments, sessionless.ReplicaRoute(req), r.Params.RequestState, r.Params.InputResponses,
				func(ctx context.Context) (mcp.Result, error) { return asResult(h.getPrompt(ctx, caller, ss, &p)) })
		}
		return h.getPrompt(ctx, caller, ss, r.Params)
	case "resources/read":
		r, ok := req.(*mcp.ReadResourceRequest)
		if !ok || r.Params == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/read: missing params"}
		}
		caller := h.callerOf(req, transport)
		if usesRounds(ss) {
			p := *r.Params
			p.InputResponses, p.RequestState = nil, ""
			return h.inRounds(ctx, ss, caller, h.identityOf(ctx, req, transport).Key(), sessionless.RoundKey(method, p.URI), nil, sessionless.ReplicaRoute(req), r.Params.RequestState, r.Params.InputResponses,
				func(ctx context.Context) (mcp.Result, error) { return asResult(h.readResource(ctx, caller, ss, &p)) })
		}
		return h.readResource(ctx, caller, ss, r.Params)
	case "logging/setLevel":
		if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok && r.Params != nil && ss != nil {
			h.setLevel(ctx, ss, r.Params.Level)
		}
		return next(ctx, method, req)
	case "tools/list":
		v, err := h.view(ctx, h.callerOf(req, transport))
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: wire.ErrorText(err)}
		}
		if x := h.searchExposure(ctx); x != nil {
			found, _ := h.found(ss)
			res, exec := search.List(v.tools, x.Always, found)
			return catalog.ToolsAnswer(req, res, tasksOffered(transport, exec), true), nil
		}
		return v.answer(req, h.wants(abi.HookToolsList), transport), nil
	case "tools/call":
		r, ok := req.(*mcp.CallToolRequest)
		if !ok || r.Params == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: missing params"}
		}
		if e := req.GetExtra(); e != nil {
			ctx = paramheader.WithIncoming(ctx, e.Header) // checked by resolve
		}
		caller, p := h.callerOf(req, transport), r.Params
		if !usesRounds(ss) {
			return h.answerToolCall(ctx, caller, p, ss)
		}
		// What the upstream asks during the call comes back as
		// input_required results (rounds.go).
		res, err := h.inRounds(ctx, ss, caller, h.identityOf(ctx, req, transport).Key(), sessionless.RoundKey(method, p.Name), p.Arguments, sessionless.ReplicaRoute(req), p.RequestState, p.InputResponses,
			func(ctx context.Context) (mcp.Result, error) { return h.answerToolCall(ctx, caller, p, ss) })
		var serr sessionless.StateError
		if errors.As(err, &serr) {
			return nil, serr.RPC
		}
		if err != nil {
			return nil, callError(err)
		}
		return res, nil
	}
	return next(ctx, method, req)
}

// callerOf describes the downstream client of a request for policies.
func (h *Host) callerOf(req mcp.Request, transport string) abi.Caller {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	c := h.sessionCaller(ss, transport)
	// Params may be a typed nil (tools/list without params).
	if p := req.GetParams(); !wire.IsNilParams(p) {
		c.Meta = sessionless.CallerMeta(p.GetMeta())
	}
	if c.Subject == "" {
		// A session the host does not track: what the request says.
		h.identityOf(context.Background(), req, transport).Fill(&c)
	}
	return c
}

// requestCaller is callerOf for a request the go-sdk hands to a handler
// (completion, subscriptions), which does not say the transport: the
// session table does.
func (h *Host) requestCaller(req mcp.Request) abi.Caller {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return h.callerOf(req, h.transportOf(ss))
}

// transportOf returns the transport of a downstream session, or
// DownstreamEmbedded for one the host does not track.
func (h *Host) transportOf(ss *mcp.ServerSession) string {
	if d, _ := h.sessions.lookup(ss); d != nil {
		return d.transport
	}
	return DownstreamEmbedded
}

// sessionCaller describes the client of a downstream session (nil: none)
// as far as the session itself tells, its identity included: what a
// request adds is in callerOf. The tools/list shortcut uses it alone, for
// requests that add nothing.
func (h *Host) sessionCaller(ss *mcp.ServerSession, transport string) abi.Caller {
	if ss == nil {
		return abi.Caller{Transport: transport}
	}
	d, _ := h.sessions.lookup(ss)
	return trackedCaller(d, ss, transport)
}

// trackedCaller is sessionCaller for a session already looked up: d is
// its entry in the session table (nil when not tracked).
func trackedCaller(d *downstream, ss *mcp.ServerSession, transport string) abi.Caller {
	c := abi.Caller{Transport: transport}
	if d != nil {
		d.identity.Fill(&c)
	}
	c.SessionID = ss.ID()
	if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
		c.ClientName = ip.ClientInfo.Name
		c.ClientVersion = ip.ClientInfo.Version
	}
	return c
}
