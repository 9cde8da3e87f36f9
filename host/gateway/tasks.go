package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/tasks"
)

// MCP tasks (protocol 2025-11-25) on streamable HTTP sessions: a
// tools/call with params.task and the tasks/* methods, which the go-sdk's
// server knows neither of, are answered here, ahead of its handler. The
// machinery is package host/tasks; this file is its seam: it admits the
// call as any call is admitted, runs the rest as a task, and answers.

// taskVersion is the protocol version that defines the tasks methods.
const taskVersion = "2025-11-25"

// maxTaskBody is the longest request body read to look for a task.
const maxTaskBody = maxFastCallBody

// taskHandler answers the task requests of established sessions and hands
// everything else to next.
func (h *Host) taskHandler(next http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		if r.Method != http.MethodPost || sid == "" || r.Body == nil || r.ContentLength <= 0 || r.ContentLength > maxTaskBody {
			next.ServeHTTP(w, r)
			return
		}
		body, whole := readShortBody(r, maxBody)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !whole || !(bytes.Contains(body, []byte(`"tasks/`)) || bytes.Contains(body, []byte(`"task"`))) {
			next.ServeHTTP(w, r)
			return
		}
		ss, d := h.sessions.byID(sid)
		req, err := tasks.DecodeRequest(body)
		if ss == nil || d == nil || err != nil || !tasksOffered(ss) {
			next.ServeHTTP(w, r)
			return
		}
		var res json.RawMessage
		var rerr *jsonrpc.Error
		switch {
		case req.Method == "tools/call":
			p, ok, err := tasks.DecodeCall(req.Params)
			if err == nil && !ok {
				next.ServeHTTP(w, r) // an ordinary call
				return
			}
			if err != nil {
				rerr = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
				break
			}
			res, rerr = h.startTask(r.Context(), ss, d, p)
		case tasks.TaskMethod(req.Method):
			res, rerr = h.taskMethod(r.Context(), ss, d, req)
		default:
			next.ServeHTTP(w, r)
			return
		}
		writeRPC(w, ss.ID(), req.ID, res, rerr)
	})
}

// tasksOffered reports whether ss negotiated the protocol that has tasks.
func tasksOffered(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion == taskVersion
}

// taskOwner is whose a task is: the caller's identity, or, for a caller
// the endpoint does not authenticate, the session (nothing else tells two
// such callers apart).
func taskOwner(d *downstream, ss *mcp.ServerSession) string {
	if d.identity != nil {
		return "id:" + d.identity.Key()
	}
	return "session:" + ss.ID()
}

// startTask admits a tools/call as any call is admitted (a refusal is
// answered as for a plain call, with no task) and runs the rest as a task.
func (h *Host) startTask(ctx context.Context, ss *mcp.ServerSession, d *downstream, p *tasks.CallParams) (json.RawMessage, *jsonrpc.Error) {
	var meta mcp.Meta
	if len(p.Meta) > 0 {
		if err := json.Unmarshal(p.Meta, &meta); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: _meta: " + err.Error()}
		}
		delete(meta, "progressToken") // the request it names ends now
	}
	caller := trackedCaller(d, ss, DownstreamHTTP)
	caller.Meta = requestMeta(meta)
	start := time.Now()
	var tr *callTrace
	if h.observer != nil || h.audit != nil {
		tr = &callTrace{audit: h.audit != nil}
	}
	c, ticket, res, err := h.admitted(ctx, caller, p.Name, p.Arguments, tr)
	if c == nil {
		if tr != nil {
			h.observeCall(tr, start, caller, p.Name, p.Arguments, res, err)
		}
		if err != nil {
			return nil, callError(err)
		}
		return encodeResult(res)
	}
	owner := taskOwner(d, ss)
	run := func(ctx context.Context) tasks.Outcome {
		defer ticket.Release()
		res, err := h.transform(ctx, c, h.forwardCall(ctx, c, meta, ss, tr), tr)
		if tr != nil {
			h.observeCall(tr, start, caller, p.Name, p.Arguments, res, err)
		}
		if err != nil {
			return tasks.Outcome{Err: callError(err)}
		}
		raw, rerr := encodeResult(res)
		if rerr != nil {
			return tasks.Outcome{Err: rerr}
		}
		return tasks.Outcome{Result: raw, Failed: resultIsError(res)}
	}
	t, err := h.taskRunner.Start(owner, p.Task.TTL, run, nil)
	if err != nil {
		ticket.Release()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	h.log.Debug("call runs as a task", "tool", p.Name, "session", ss.ID())
	return encodeResult(map[string]any{"task": h.publicTask(owner, t)})
}

// publicTask is t as its client sees it: under the id that routes back.
func (h *Host) publicTask(owner string, t tasks.Task) tasks.Task {
	t.TaskID = h.taskIDs.Encode(owner, tasks.Ref{ID: t.TaskID})
	return t
}

// taskMethod answers tasks/get, tasks/result, tasks/list and tasks/cancel.
func (h *Host) taskMethod(ctx context.Context, ss *mcp.ServerSession, d *downstream, req *tasks.Request) (json.RawMessage, *jsonrpc.Error) {
	owner := taskOwner(d, ss)
	if req.Method == "tasks/list" {
		if _, err := tasks.DecodeCursor(req.Params); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		list := h.taskRunner.List(owner)
		for i := range list {
			list[i] = h.publicTask(owner, list[i])
		}
		return encodeResult(map[string]any{"tasks": list})
	}
	id, err := tasks.DecodeTaskID(req.Params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	ref, err := h.taskIDs.Decode(owner, id)
	if err == nil && ref.Server != "" {
		err = tasks.ErrUnknownTask // upstream tasks are not forwarded yet
	}
	var t tasks.Task
	switch {
	case err != nil:
	case req.Method == "tasks/get":
		t, err = h.taskRunner.Get(owner, ref.ID)
	case req.Method == "tasks/cancel":
		t, err = h.taskRunner.Cancel(owner, ref.ID)
	default: // tasks/result
		var out tasks.Outcome
		if t, out, err = h.taskRunner.Result(ctx, owner, ref.ID); err == nil {
			return taskResult(id, out)
		}
	}
	if err != nil {
		return nil, taskError(err)
	}
	t.TaskID = id
	return encodeResult(t)
}

// taskResult is tasks/result's answer: the call's result with the task in
// its _meta, or the error the call ended with.
func taskResult(id string, out tasks.Outcome) (json.RawMessage, *jsonrpc.Error) {
	if out.Err != nil {
		var werr *jsonrpc.Error
		if errors.As(out.Err, &werr) {
			return nil, werr
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: wire.ErrorText(out.Err)}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out.Result, &m); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks: the result: " + err.Error()}
	}
	var meta map[string]any
	if raw, ok := m["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[tasks.RelatedTaskKey] = map[string]string{"taskId": id}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	m["_meta"] = b
	return encodeResult(m)
}

// taskError is the JSON-RPC error of a task request that failed.
func taskError(err error) *jsonrpc.Error {
	switch {
	case errors.Is(err, tasks.ErrUnknownTask):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	case errors.Is(err, tasks.ErrTerminal):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Cannot cancel task: " + err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: wire.ErrorText(err)}
}

func encodeResult(v any) (json.RawMessage, *jsonrpc.Error) {
	b, err := wire.EncodeJSON(v)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}
	}
	return b, nil
}

// writeRPC writes one JSON-RPC response as application/json.
func writeRPC(w http.ResponseWriter, sid string, id json.RawMessage, res json.RawMessage, rerr *jsonrpc.Error) {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	if rerr != nil {
		e, _ := json.Marshal(map[string]any{"code": rerr.Code, "message": rerr.Message})
		b.WriteString(`,"error":`)
		b.Write(e)
	} else {
		b.WriteString(`,"result":`)
		b.Write(bytes.TrimSpace(res))
	}
	b.WriteString("}\n")
	hdr := w.Header()
	hdr["Content-Type"] = jsonContentType
	hdr["Content-Length"] = []string{strconv.Itoa(b.Len())}
	hdr["Mcp-Session-Id"] = []string{sid}
	_, _ = w.Write(b.Bytes())
}

// initializeWithTasks is an initialize result that also offers tasks:
// the go-sdk's capabilities type has no member for them.
type initializeWithTasks struct{ *mcp.InitializeResult }

func (r initializeWithTasks) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(m["capabilities"], &caps); err != nil || caps == nil {
		caps = map[string]json.RawMessage{}
	}
	caps["tasks"] = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
	if m["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// withTasks offers tasks in an initialize result for a streamable HTTP
// session of the protocol that has them.
func withTasks(res mcp.Result, transport string) mcp.Result {
	r, ok := res.(*mcp.InitializeResult)
	if !ok || transport != DownstreamHTTP || r.ProtocolVersion != taskVersion {
		return res
	}
	return initializeWithTasks{r}
}
