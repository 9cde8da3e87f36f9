package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/tasks"
)

// MCP tasks' seam (tasks.Sessions; the rest is host/tasks): who owns a
// session's tasks, and a call admitted as any call before its task
// exists, then forwarded and transformed inside the task.
type taskSessions struct{ h *Host }

// Owner is the caller's identity, or the session for a caller the
// endpoint does not authenticate (nothing else tells two such apart).
func (s taskSessions) Owner(sid string) (string, bool) {
	ss, d := s.h.sessions.byID(sid)
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().ProtocolVersion != tasks.Version {
		return "", false
	} else if d.identity != nil {
		return "id:" + d.identity.Key(), true
	}
	return "session:" + sid, true
}

func (s taskSessions) Admit(ctx context.Context, sid string, p *tasks.CallParams) (func(context.Context) tasks.Outcome, json.RawMessage, *jsonrpc.Error) {
	h := s.h
	ss, d := h.sessions.byID(sid)
	var meta mcp.Meta
	if err := json.Unmarshal(p.Meta, &meta); ss == nil || len(p.Meta) > 0 && err != nil {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: the session ended, or _meta is not an object"}
	}
	delete(meta, "progressToken") // its request ends now
	caller := trackedCaller(d, ss, DownstreamHTTP)
	caller.Meta = requestMeta(meta)
	start, tr := time.Now(), (*callTrace)(nil)
	if h.observer != nil || h.audit != nil {
		tr = &callTrace{audit: h.audit != nil}
	}
	answer := func(res mcp.Result, err error) (json.RawMessage, *jsonrpc.Error) {
		if tr != nil {
			h.observeCall(tr, start, caller, p.Name, p.Arguments, res, err)
		}
		b, err2 := json.Marshal(res)
		if err != nil || err2 != nil {
			return nil, callError(cmp.Or(err, err2))
		}
		return b, nil
	}
	c, ticket, res, err := h.admitted(ctx, caller, p.Name, p.Arguments, tr)
	if c == nil {
		b, rerr := answer(res, err)
		return nil, b, rerr
	}
	return func(ctx context.Context) tasks.Outcome {
		defer ticket.Release()
		res, err := h.transform(ctx, c, h.forwardCall(ctx, c, meta, ss, tr), tr)
		b, rerr := answer(res, err)
		if rerr != nil {
			return tasks.Outcome{Err: rerr}
		}
		return tasks.Outcome{Result: b, Failed: resultIsError(res)}
	}, nil, nil
}
