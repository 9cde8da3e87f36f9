package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/sessionless"
	"github.com/mcphost-project/mcphost/host/tasks"
)

// MCP tasks' seam: tasks.Sessions (the rest, and the why, is host/tasks).
type taskSessions struct{ h *Host }

// Owner's handle: the session; in protocol 2026-07-28 (none) the identity.
func (s taskSessions) Owner(r *http.Request) (any, string) {
	sid, id := r.Header.Get("Mcp-Session-Id"), auth.FromContext(r.Context())
	if sid == "" {
		return id, "id:" + id.Key()
	}
	e := s.h.fastSessions.lookup(sid) // forgotten when the session ends
	// A session is known from its notifications/initialized, which the
	// go-sdk hands on after answering it: a client's first task request
	// may come first.
	for wait := 0; e == nil && wait < 25 && r.Context().Err() == nil; wait++ {
		time.Sleep(10 * time.Millisecond)
		e = s.h.fastSessions.lookup(sid)
	}
	if e == nil || e.version != tasks.Version {
		return nil, ""
	} else if id = s.h.Identity(e.ss); id != nil {
		return e.ss, "id:" + id.Key()
	}
	return e.ss, "session:" + sid
}

func (s taskSessions) Admit(ctx context.Context, session any, p *tasks.CallParams) (a tasks.Admitted) {
	h, meta, start, tr := s.h, mcp.Meta(p.MetaMap), time.Now(), s.h.newTrace()
	ss, _ := session.(*mcp.ServerSession)
	caller := h.sessionCaller(ss, DownstreamHTTP)
	if id, ok := session.(*auth.Identity); ok {
		id.Fill(&caller)
	}
	caller.Meta = sessionless.CallerMeta(meta)
	a.Caller = caller
	if p.Unwrap(h.exposure(ctx).Exposure) { // search exposure's and code mode's own tools run whole, as a plain call runs them
		a.Run = func(ctx context.Context) tasks.Outcome {
			res, err := h.answerToolCall(ctx, caller, &mcp.CallToolParamsRaw{Name: p.Name, Arguments: p.Arguments, Meta: meta}, ss)
			return tasks.OutcomeOf(h.taskAnswer(nil, start, caller, p.Name, p.Arguments, res, err))
		}
		return a
	}
	c, ticket, res, err := h.admitted(ctx, caller, p.Name, p.Arguments, tr)
	switch {
	case c == nil:
		a.Result, a.Err = h.taskAnswer(tr, start, caller, p.Name, p.Arguments, res, err)
	case c.u.OffersTasks(): // the server runs it: admitted, it is under way
		ticket.Release()
		a.Upstream, a.Server, a.Tool, a.Arguments, a.Meta = h.taskUpstream(c, ss, tr, start), c.route.Server, c.route.Tool, c.args, meta
	default:
		a.Run = func(ctx context.Context) tasks.Outcome {
			defer ticket.Release()
			up := h.forwardCall(ctx, c, meta, ss, tr)
			res, err := h.transform(ctx, c, up, tr)
			out := tasks.OutcomeOf(h.taskAnswer(tr, start, caller, p.Name, p.Arguments, res, err))
			if up.rpc != nil { // the task fails with it, in the words the result policies left
				out = tasks.FailedWith(up.rpc.Code, out)
			}
			if out.Failed && h.Draining() { // cut short by the drain (listen.drain_timeout)
				out.Message = tasks.StoppedMessage
			}
			return out
		}
	}
	return a
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

// taskUpstream is c's server on the caller's session: requests go the way
// every request goes (forward), results through the result policies; the
// first result delivered ends the call for the observer and the audit log.
func (h *Host) taskUpstream(c *toolCall, ss *mcp.ServerSession, tr *callTrace, start time.Time) tasks.Upstream {
	var once sync.Once
	return tasks.UpstreamFuncs{SendFunc: func(ctx context.Context, method string, params json.RawMessage) (raw json.RawMessage, err error) {
		err = h.forward(ctx, ss, c.u, method, nil, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
			tasks.NoteConn(ctx, cs) // the task's status notifications come on it
			raw, err = c.u.TaskRequest(ctx, cs, method, params)
			return err
		})
		return raw, err
	}, ResultFunc: func(ctx context.Context, raw json.RawMessage) tasks.Outcome {
		var trace *callTrace
		once.Do(func() { trace = tr })
		res, err := h.transform(ctx, c, upstreamResult{raw: raw}, trace)
		return tasks.OutcomeOf(h.taskAnswer(trace, start, c.caller, c.name, c.args, res, err))
	}}
}
