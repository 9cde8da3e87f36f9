package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/tasks"
)

// MCP tasks' seam (tasks.Sessions; the rest, and what each method does, is
// in host/tasks).
type taskSessions struct{ h *Host }

func (s taskSessions) Owner(sid string) (any, string) {
	e := s.h.fastSessions.lookup(sid)
	if e == nil || e.version != tasks.Version || !s.h.SessionLive(e.ss) {
		return nil, ""
	} else if id := s.h.Identity(e.ss); id != nil {
		return e.ss, "id:" + id.Key()
	}
	return e.ss, "session:" + sid
}

func (s taskSessions) Admit(ctx context.Context, session any, p *tasks.CallParams) (a tasks.Admitted) {
	h, ss, meta, start, tr := s.h, session.(*mcp.ServerSession), mcp.Meta(p.MetaMap), time.Now(), s.h.taskTrace()
	caller := h.sessionCaller(ss, DownstreamHTTP)
	caller.Meta = requestMeta(meta)
	c, ticket, res, err := h.admitted(ctx, caller, p.Name, p.Arguments, tr)
	switch {
	case c == nil:
		a.Result, a.Err = h.taskAnswer(tr, start, caller, p.Name, p.Arguments, res, err)
	case c.u.OffersTasks(): // the server runs it: admitted, it is under way
		ticket.Release()
		a.Upstream, a.Server, a.Tool, a.Arguments, a.Meta = h.taskUpstream(c, ss, nil), c.route.Server, c.route.Tool, c.args, meta
	default:
		a.Run = func(ctx context.Context) tasks.Outcome {
			defer ticket.Release()
			res, err := h.transform(ctx, c, h.forwardCall(ctx, c, meta, ss, tr), tr)
			return tasks.OutcomeOf(h.taskAnswer(tr, start, caller, p.Name, p.Arguments, res, err))
		}
	}
	return a
}

// taskTrace is a trace for the observer and the audit log; nil without.
func (h *Host) taskTrace() *callTrace {
	if h.observer == nil && h.audit == nil {
		return nil
	}
	return &callTrace{audit: h.audit != nil}
}

// taskAnswer records a call's end, when traced, and encodes its answer.
func (h *Host) taskAnswer(tr *callTrace, start time.Time, caller abi.Caller, name string, args json.RawMessage, res mcp.Result, err error) (json.RawMessage, *jsonrpc.Error) {
	if tr != nil {
		h.observeCall(tr, start, caller, name, args, res, err)
	}
	b, err2 := json.Marshal(res)
	if err != nil || err2 != nil {
		return nil, callError(cmp.Or(err, err2))
	}
	return b, nil
}

// Reach resolves tool in the caller's view again; tr records the result.
func (s taskSessions) Reach(ctx context.Context, session any, tool string) (tasks.Upstream, string) {
	ss, tr := session.(*mcp.ServerSession), s.h.taskTrace()
	if c, _, _ := s.h.resolve(ctx, s.h.sessionCaller(ss, DownstreamHTTP), tool, nil, tr); c != nil && c.u.OffersTasks() {
		return s.h.taskUpstream(c, ss, tr), c.route.Server
	}
	return nil, ""
}

// taskUpstream is c's server on the caller's session: requests go the way
// every request goes (forward), results through the result policies.
func (h *Host) taskUpstream(c *toolCall, ss *mcp.ServerSession, tr *callTrace) tasks.Upstream {
	return tasks.UpstreamFuncs{SendFunc: func(ctx context.Context, method string, params json.RawMessage) (raw json.RawMessage, err error) {
		err = h.forward(ctx, ss, c.u, method, nil, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
			raw, err = c.u.TaskRequest(ctx, cs, method, params)
			return err
		})
		return raw, err
	}, ResultFunc: func(ctx context.Context, raw json.RawMessage) tasks.Outcome {
		start := time.Now()
		res, err := h.transform(ctx, c, upstreamResult{raw: raw}, tr)
		return tasks.OutcomeOf(h.taskAnswer(tr, start, c.caller, c.name, nil, res, err))
	}}
}
