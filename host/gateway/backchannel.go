package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/extensions"
	"github.com/mcphost-project/mcphost/host/internal/outbox"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/sessionless"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// What upstreams send toward clients: requests (sampling, elicitation,
// roots), log messages, resource updates and elicitation completions, each
// routed to the downstream client it belongs to. Progress is in progress.go,
// and everything is written through the session's outbox (outbox.go).

// callRegistry records which downstream session each upstream request in
// flight came from, per upstream session, so that what a server sends
// during a call can be routed to the caller.
type callRegistry struct {
	mu sync.Mutex
	m  map[*mcp.ClientSession][]*inflightCall
}

type inflightCall struct {
	ss  *mcp.ServerSession // nil for a call of the 2026-07-28 shortcut, which has no session
	ctx context.Context    // the downstream handler's: messages sent with it go on the call's stream
	// client tells the callers apart: ss, or the call in rounds of a
	// shortcut call.
	client any
}

func (r *callRegistry) enter(cs *mcp.ClientSession, ss *mcp.ServerSession, ctx context.Context) func() {
	c := &inflightCall{ss: ss, ctx: ctx, client: ss}
	if ss == nil {
		c.client = sessionless.RoundFrom(ctx)
	}
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
	seen := map[any]bool{}
	for _, c := range r.m[cs] {
		if only != nil && c.ss != only {
			continue
		}
		seen[c.client] = true
		ss, ctx = c.ss, c.ctx
	}
	if len(seen) != 1 {
		return nil, nil, len(seen)
	}
	return ss, ctx, 1
}

// roundCaller returns, of the calls in flight on cs, the oldest that is a
// call in rounds still running and is not skip, with its context. A
// per-client session serves one identity, whose 2026-07-28 calls each come
// as a session of their own: when several run at once, which of them a
// server's question is for cannot be told (the upstream's protocol does
// not say), and any of them can take it to the same client.
func (r *callRegistry) roundCaller(cs *mcp.ClientSession, skip *sessionless.Round) (*mcp.ServerSession, context.Context, *sessionless.Round) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.m[cs] {
		if rc := sessionless.RoundFrom(c.ctx); rc != nil && rc != skip && !rc.Ended() {
			return c.ss, c.ctx, rc
		}
	}
	return nil, nil, nil
}

// oneOwner reports whether every call in flight on cs is a call in rounds
// of one identity: on a shared session, the only case where any of them
// may take a server's question (to the same caller).
func (r *callRegistry) oneOwner(cs *mcp.ClientSession) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	owner := ""
	for _, c := range r.m[cs] {
		rc := sessionless.RoundFrom(c.ctx)
		if rc == nil || rc.Owner() == "" || (owner != "" && rc.Owner() != owner) {
			return false
		}
		owner = rc.Owner()
	}
	return owner != ""
}

// clientFor picks the downstream session (and the context to send with)
// for something cs sent: a per-client session's owner, or in shared mode
// the one client with calls in flight on it.
func (h *Host) clientFor(u *upstream.Server, cs *mcp.ClientSession, what string) (*mcp.ServerSession, context.Context, error) {
	if owner := u.OwnerOf(cs); owner != nil || u.IsPerClientSession(cs) {
		// A per-client session: its client's session with a call in
		// flight on it (which may have ended, when a 2026-07-28 call
		// waits for its next round, rounds.go), or the one that sent a
		// request last.
		ss, ctx, n := h.calls.caller(cs, nil)
		if n == 1 {
			return ss, ctx, nil
		}
		if n > 1 {
			if ss, ctx, rc := h.calls.roundCaller(cs, nil); rc != nil {
				return ss, ctx, nil
			}
		}
		if owner != nil {
			return owner, context.Background(), nil
		}
		return nil, nil, fmt.Errorf("mcphost: server %q sent %s on a per-client session that serves no client now (starting or closing); dropped", u.Config.Name, what)
	}
	ss, ctx, n := h.calls.caller(cs, nil)
	if n > 1 && h.calls.oneOwner(cs) {
		if ss, ctx, rc := h.calls.roundCaller(cs, nil); rc != nil {
			return ss, ctx, nil
		}
	}
	switch n {
	case 1:
		return ss, ctx, nil
	case 0:
		return nil, nil, fmt.Errorf("mcphost: server %q sent %s with no downstream request in flight to answer it", u.Config.Name, what)
	}
	return nil, nil, fmt.Errorf("mcphost: server %q sent %s while %d clients have requests in flight on its shared session, so which client it is for is ambiguous; set sessions = %q on the server to route it", u.Config.Name, what, n, upstream.SessionsPerClient)
}

// ServerRequest answers a server-to-client request by asking the
// downstream client it belongs to, with the context of that client's call
// in flight (so a streamable HTTP client gets it on the call's stream).
func (h *Host) ServerRequest(ctx context.Context, u *upstream.Server, cs *mcp.ClientSession, method string, req mcp.Request) (mcp.Result, error) {
	ss, callCtx, err := h.clientFor(u, cs, method)
	if err != nil {
		// Servers ask at every connect (roots/list, before any client
		// call): said once per server and method, then at debug.
		if h.refusedLog.Once(u.Config.Name + "\x00" + method) {
			h.log.Warn("server-to-client request refused (said once per server and method)", "server", u.Config.Name, "method", method, "error", err)
		} else {
			h.log.Debug("server-to-client request refused", "server", u.Config.Name, "method", method, "error", err)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
	}
	// Protocol 2026-07-28 has no server-to-client requests: a tools/call,
	// prompts/get or resources/read asks its client in rounds (rounds.go);
	// nothing else can ask.
	rc := sessionless.RoundFrom(callCtx)
	if ss == nil && rc == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("mcphost: server %q sent %s with no downstream request in flight to answer it", u.Config.Name, method)}
	}
	if rc == nil {
		if v := wire.ProtocolOf(ss); v >= wire.NewProtocolVersion {
			return nil, sessionless.NoMidCallRequests(u.Config.Name, method, v)
		}
	}
	// What an upstream asks of a client goes through the request hook (a
	// policy may refuse it) and, where it carries text the client shows or
	// hands to its model, the message hook.
	caller, server := h.sessionCaller(ss, h.transportOf(ss)), u.Config.Name
	if rc != nil {
		caller = rc.Caller() // ss may have ended with the round that began the call
	}
	if err := h.admit(ctx, caller, method, server, "", req.GetParams(), nil); err != nil {
		h.log.Info("server-to-client request refused by policy", "server", server, "method", method, "error", err)
		return nil, err
	}
	defer h.tasks.Asking(callCtx)() // inside a task mcphost runs, it is input_required meanwhile
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
		if rc != nil {
			return h.askInRounds(ctx, cs, rc, method, p)
		}
		res, err = ss.CreateMessageWithTools(dctx, p)
	case *mcp.ElicitRequest:
		p, gerr := governMessage(ctx, h, caller, method, server, "", r.Params)
		if gerr != nil {
			return nil, gerr
		}
		if rc != nil {
			return h.askInRounds(ctx, cs, rc, method, p)
		}
		if p != nil && p.ElicitationID != "" {
			h.elicitations.put(p.ElicitationID, ss)
		}
		res, err = ss.Elicit(dctx, p)
	case *mcp.ListRootsRequest:
		if rc != nil {
			p := r.Params
			if p == nil {
				p = &mcp.ListRootsParams{}
			}
			return h.askInRounds(ctx, cs, rc, method, p)
		}
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

// LogMessage forwards a server's log message to the client it belongs to:
// a per-client session's owner; on a shared session the one client with a
// call in flight, else every client that set a log level. Each client's own
// level filters what it is sent.
func (h *Host) LogMessage(u *upstream.Server, cs *mcp.ClientSession, p *mcp.LoggingMessageParams) {
	out := *p
	if out.Logger == "" {
		out.Logger = u.Config.Name
	}
	// Queued, never written here: this runs on the upstream's read loop,
	// which a client that does not read must not hold up (outbox.go).
	if ss, ctx, err := h.clientFor(u, cs, "a log message"); err == nil {
		h.notify(ss, outbox.Note{Kind: outbox.NoteLog, Ctx: ctx, Server: u.Config.Name, Log: &out})
		return
	}
	if u.IsPerClientSession(cs) {
		return // one client's: never broadcast
	}
	for _, ss := range h.sessions.logging() {
		h.notify(ss, outbox.Note{Kind: outbox.NoteLog, Ctx: context.Background(), Server: u.Config.Name, Log: &out})
	}
}

// ResourceUpdated forwards notifications/resources/updated to the clients
// subscribed to the URI; from a per-client session, only to the sessions it
// serves.
func (h *Host) ResourceUpdated(u *upstream.Server, cs *mcp.ClientSession, p *mcp.ResourceUpdatedNotificationParams) {
	out := *p
	out.URI = extensions.ExposeURI(u.Config.Name, p.URI)
	meta := make(mcp.Meta, len(p.Meta)+2)
	for k, v := range p.Meta {
		meta[k] = v
	}
	meta[fromKey] = u.Config.Name // for policies: who sent it
	if owners := u.OwnersOf(cs); owners != nil {
		ids := make([]string, len(owners))
		for i, o := range owners {
			ids[i] = h.sessions.id(o)
		}
		meta[deliverToKey] = ids
	} else if u.IsPerClientSession(cs) {
		return // one client's, which is gone: never broadcast
	}
	out.Meta = meta
	h.servers.resourceUpdated(&out)
}

// ElicitationComplete forwards notifications/elicitation/complete to the
// client that was sent the URL elicitation.
func (h *Host) ElicitationComplete(u *upstream.Server, cs *mcp.ClientSession, p *mcp.ElicitationCompleteParams) {
	ss := h.elicitations.take(p.ElicitationID)
	if ss == nil {
		ss = u.OwnerOf(cs)
	}
	if ss == nil {
		h.log.Debug("elicitation completion for an unknown elicitation dropped", "server", u.Config.Name, "id", p.ElicitationID)
		return
	}
	h.notify(ss, outbox.Note{Kind: outbox.NoteElicitationComplete, Ctx: context.Background(), Send: func(ctx context.Context, _ outbox.Note) error {
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
