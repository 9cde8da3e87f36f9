package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/paramheader"
)

// Version is the protocol version that defines the tasks methods.
const Version = "2025-11-25"

// MaxBody is the longest request body the Service reads to look for a
// task request; a longer one goes on unread.
const MaxBody = 64 << 10

// Sessions is what the Service needs of the gateway.
type Sessions interface {
	// Owner returns the caller of r (a handle passed back to Admit) and whose tasks it may reach: the caller's identity, or for a
	// caller the endpoint does not authenticate, the session (protocol
	// Version) or no one (Version2026: the id alone is the capability).
	// owner is "" for a session that is not one of Version.
	Owner(r *http.Request) (session any, owner string)
	// Admit admits a tools/call of the session as the gateway admits any
	// call.
	Admit(ctx context.Context, session any, p *CallParams) Admitted
}

// Admitted is what admitting a call led to: its end (Result or Err: an
// unknown tool, a refusal, a quota), a task mcphost runs (Run, which must
// be called exactly once), or a task its server runs (Create).
type Admitted struct {
	Result json.RawMessage
	Err    *jsonrpc.Error

	Run func(context.Context) Outcome

	// Upstream, when set, is the call's server (Server), which runs the
	// task: the call goes to it with Tool, Arguments (as admitted) and
	// Meta, and every later request about the task through Upstream (it is
	// held with the task, so the caller reaches it as the call did).
	Upstream  Upstream
	Server    string
	Tool      string
	Arguments json.RawMessage
	Meta      map[string]any

	// Caller is who called: what the server asks inside a task of the
	// extension passes the policies as theirs.
	Caller abi.Caller
}

// Upstream is the server of a task it runs, on its caller's session.
type Upstream interface {
	// Send sends a request and returns its result as sent.
	Send(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Result runs the gateway's result policies on a tools/call result,
	// and records the call's end (the first time).
	Result(ctx context.Context, raw json.RawMessage) Outcome
}

// Service answers the task requests of established sessions, ahead of
// the go-sdk's streamable HTTP handler, which knows neither the tasks
// methods nor params.task.
type Service struct {
	IDs      *IDs
	Runner   *Runner
	Sessions Sessions
	Log      hclog.Logger // nil discards

	streams streams // the sessions' standalone event streams (status.go)
}

// Handler serves task requests and hands every other request to next.
func (s *Service) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		if r.Method == http.MethodGet && sid != "" {
			s.serveStream(next, w, r, sid)
			return
		}
		if r.Method != http.MethodPost || sid == "" || r.Body == nil || r.ContentLength <= 0 || r.ContentLength > MaxBody {
			next.ServeHTTP(w, r)
			return
		}
		body := make([]byte, r.ContentLength)
		n, err := io.ReadFull(r.Body, body)
		body = body[:n]
		if err != nil {
			// Short: the go-sdk reads what there is and answers as it does.
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tasks/`)) && !bytes.Contains(body, []byte(`"task"`)) {
			next.ServeHTTP(w, r)
			return
		}
		req, err := DecodeRequest(body)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		session, owner := s.Sessions.Owner(r)
		if owner == "" {
			next.ServeHTTP(w, r)
			return
		}
		var res json.RawMessage
		var rerr *jsonrpc.Error
		switch {
		case req.Method == "tools/call":
			p, isTask, err := DecodeCall(req.Params)
			if err == nil && !isTask {
				next.ServeHTTP(w, r) // an ordinary call
				return
			}
			if err != nil {
				rerr = invalidParams(err)
				break
			}
			res, rerr = s.start(paramheader.WithIncoming(r.Context(), r.Header), session, owner, sid, p) // Mcp-Param-* checked at admission
		case TaskMethod(req.Method):
			res, rerr = s.method(r.Context(), session, owner, req)
		default:
			next.ServeHTTP(w, r)
			return
		}
		writeResponse(w, sid, req.ID, res, rerr)
	})
}

// Asking is Runner.Asking: a task's call asks its client something
// (ctx is the call's), until done.
func (s *Service) Asking(ctx context.Context) (done func()) { return s.Runner.Asking(ctx) }

func invalidParams(err error) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}

// start admits the call (a refusal is answered as for a plain call, with
// no task) and runs the rest as a task.
func (s *Service) start(ctx context.Context, session any, owner, sid string, p *CallParams) (json.RawMessage, *jsonrpc.Error) {
	if err := s.Runner.Room(owner); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	a := s.Sessions.Admit(AsTask(ctx), session, p)
	if a.Upstream != nil {
		return s.create(ctx, owner, sid, p, a)
	}
	run := a.Run
	if run == nil {
		return a.Result, a.Err
	}
	started := make(chan struct{})
	t, err := s.Runner.Start(owner, p.Task.TTL, func(ctx context.Context) Outcome {
		<-started
		return run(ctx)
	}, s.statusNotifier(sid, owner))
	if err != nil {
		// Room said yes, and another task took the place since (rare):
		// run must still be called once, to release what the admission
		// took, and ends at once.
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		go run(ctx)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	close(started)
	s.logger().Debug("call runs as a task", "tool", p.Name)
	return encode(map[string]any{"task": s.public(owner, t)})
}

func (s *Service) logger() hclog.Logger {
	if s.Log == nil {
		return hclog.NewNullLogger()
	}
	return s.Log
}

// public is t as its client sees it: under the id that routes back.
func (s *Service) public(owner string, t Task) Task {
	t.TaskID = s.IDs.Encode(owner, Ref{ID: t.TaskID})
	return t
}

// method answers tasks/get, tasks/result, tasks/list and tasks/cancel.
func (s *Service) method(ctx context.Context, session any, owner string, req *Request) (json.RawMessage, *jsonrpc.Error) {
	if req.Method == "tasks/list" {
		if _, err := DecodeCursor(req.Params); err != nil {
			return nil, invalidParams(err)
		}
		var list []json.RawMessage
		for _, t := range s.Runner.List(owner) {
			var b json.RawMessage
			if v, err := s.Runner.Held(owner, t.TaskID); err == nil {
				b, _ = s.forward(ctx, owner, v.(upstreamTask).public, Ref{ID: t.TaskID}, "tasks/get") // its server knows its state
			} else {
				b, _ = encode(s.public(owner, t))
			}
			if b != nil {
				list = append(list, b)
			}
		}
		return encode(map[string]any{"tasks": list})
	}
	id, err := DecodeTaskID(req.Params)
	if err != nil {
		return nil, invalidParams(err)
	}
	ref, err := s.IDs.Decode(owner, id)
	if err == nil && ref.Server != "" {
		return s.forward(ctx, owner, id, ref, req.Method)
	}
	var t Task
	switch {
	case err != nil:
	case req.Method == "tasks/get":
		t, err = s.Runner.Get(owner, ref.ID)
	case req.Method == "tasks/cancel":
		t, err = s.Runner.Cancel(owner, ref.ID)
	default: // tasks/result
		var out Outcome
		if _, out, err = s.Runner.Result(ctx, owner, ref.ID); err == nil {
			return resultOf(id, out)
		}
	}
	if err != nil {
		return nil, errorOf(err)
	}
	t.TaskID = id
	return encode(t)
}

// resultOf is tasks/result's answer: the call's result with the task in
// its _meta, or the error the call ended with.
func resultOf(id string, out Outcome) (json.RawMessage, *jsonrpc.Error) {
	if out.Err != nil {
		var werr *jsonrpc.Error
		if errors.As(out.Err, &werr) {
			return nil, werr
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: out.Err.Error()}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out.Result, &m); err != nil || m == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks: the result is not an object"}
	}
	var meta map[string]any
	if raw, ok := m["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[RelatedTaskKey] = map[string]string{"taskId": id}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	m["_meta"] = b
	return encode(m)
}

// errorOf is the JSON-RPC error of a task request that failed; the
// messages are those of the specification's examples.
func errorOf(err error) *jsonrpc.Error {
	switch {
	case errors.Is(err, ErrUnknownTask):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	case errors.Is(err, ErrTerminal):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Cannot cancel task: " + err.Error()}
	}
	if je := (*jsonrpc.Error)(nil); errors.As(err, &je) {
		return je // the call's own (FailedWith): its code kept
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// encode encodes a result as the go-sdk does (no HTML escaping).
func encode(v any) (json.RawMessage, *jsonrpc.Error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks: encoding the result: " + err.Error()}
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// writeResponse writes one JSON-RPC response as application/json.
func writeResponse(w http.ResponseWriter, sid string, id, res json.RawMessage, rerr *jsonrpc.Error) {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	if rerr != nil {
		doc := map[string]any{"code": rerr.Code, "message": rerr.Message}
		if len(rerr.Data) > 0 {
			doc["data"] = rerr.Data
		}
		e, _ := encode(doc)
		b.WriteString(`,"error":`)
		b.Write(e)
	} else {
		b.WriteString(`,"result":`)
		b.Write(res)
	}
	b.WriteString("}\n")
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(b.Len()))
	if sid != "" {
		hdr.Set("Mcp-Session-Id", sid)
	}
	if rerr != nil && rerr.Code == mcp.CodeHeaderMismatch {
		w.WriteHeader(http.StatusBadRequest) // as the transport asks of a header mismatch
	}
	_, _ = w.Write(b.Bytes())
}

// WithCapability offers tasks in an initialize result of Version, when
// offer (other results are returned as they are): the go-sdk's
// capabilities type has no member for them, so the result is one that
// encodes them.
func WithCapability(res *mcp.InitializeResult, offer bool) mcp.Result {
	if res == nil || !offer || res.ProtocolVersion != Version {
		return res
	}
	return initializeResult{res}
}

type initializeResult struct{ *mcp.InitializeResult }

// capability is what mcphost offers: tools/call as a task, tasks/list and
// tasks/cancel.
const capability = `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`

func (r initializeResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	var m, caps map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(m["capabilities"], &caps); err != nil || caps == nil {
		caps = map[string]json.RawMessage{}
	}
	caps["tasks"] = json.RawMessage(capability)
	if m["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// create has the call's server run it as a task, and gives the client the
// task under an id of mcphost's. A server that answers with a result
// instead (it runs that tool only at once) has it kept as a task that is
// already done, through the result policies.
func (s *Service) create(ctx context.Context, owner, sid string, p *CallParams, a Admitted) (json.RawMessage, *jsonrpc.Error) {
	var conn connSlot
	raw, err := a.Upstream.Send(context.WithValue(ctx, connKey{}, &conn), "tools/call", upstreamCall(a, p.Task))
	if err != nil {
		return nil, upstreamError(err)
	}
	var created struct {
		Task map[string]json.RawMessage `json:"task"`
	}
	var upID string
	raw = dropRelatedTask(raw) // the client knows the task by mcphost's id only
	if json.Unmarshal(raw, &created) != nil || created.Task == nil || json.Unmarshal(created.Task["taskId"], &upID) != nil || upID == "" {
		out := a.Upstream.Result(ctx, raw)
		t, err := s.Runner.Start(owner, p.Task.TTL, func(context.Context) Outcome { return out }, s.statusNotifier(sid, owner))
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return encode(map[string]any{"task": s.public(owner, t)})
	}
	var ttl *int64
	_ = json.Unmarshal(created.Task["ttl"], &ttl)
	var public string
	_, err = s.Runner.Hold(owner, cmpOr(ttl, p.Task.TTL), func(id string) any {
		public = s.IDs.Encode(owner, Ref{Server: a.Server, ID: id, Tool: p.Name})
		return upstreamTask{up: a.Upstream, id: upID, public: public, server: a.Server, conn: conn.get(), sid: sid}
	})
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	created.Task["taskId"], _ = json.Marshal(public)
	return encode(created)
}

// forward answers a request about a task its server runs, on the
// caller's session with that server; the result goes through the result
// policies and under mcphost's id.
func (s *Service) forward(ctx context.Context, owner, id string, ref Ref, method string) (json.RawMessage, *jsonrpc.Error) {
	v, err := s.Runner.Held(owner, ref.ID)
	if err != nil {
		return nil, errorOf(err)
	}
	up := v.(upstreamTask)
	params, _ := json.Marshal(map[string]string{"taskId": up.id})
	raw, err := up.up.Send(ctx, method, params)
	if err != nil {
		return nil, upstreamError(err)
	}
	if method == "tasks/result" {
		return resultOf(id, up.up.Result(ctx, raw))
	}
	var t map[string]json.RawMessage
	if err := json.Unmarshal(dropRelatedTask(raw), &t); err != nil || t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks: the server's answer to " + method + " is not an object"}
	}
	t["taskId"], _ = json.Marshal(id)
	return encode(t)
}

// upstreamError is the JSON-RPC error of a server's failure: its own
// JSON-RPC error as it is, anything else an internal error.
func upstreamError(err error) *jsonrpc.Error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// UpstreamFuncs is an Upstream of two functions.
type UpstreamFuncs struct {
	SendFunc   func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	ResultFunc func(ctx context.Context, raw json.RawMessage) Outcome
}

func (u UpstreamFuncs) Send(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return u.SendFunc(ctx, method, params)
}

func (u UpstreamFuncs) Result(ctx context.Context, raw json.RawMessage) Outcome {
	return u.ResultFunc(ctx, raw)
}

// upstreamTask is what a held task keeps: its server and its id there.
type upstreamTask struct {
	up     Upstream
	id     string
	public string // the client's id of it
	server string // its server's name
	conn   any    // the connection to it the task was created on (NoteConn)
	sid    string // the session that created it, told of its status
}

func cmpOr(a, b *int64) *int64 {
	if a != nil {
		return a
	}
	return b
}

// upstreamCall is the tools/call params that ask a's server for a task.
func upstreamCall(a Admitted, task *TaskParams) json.RawMessage {
	args := a.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	call := map[string]any{"name": a.Tool, "arguments": args, "task": task}
	if len(a.Meta) > 0 {
		call["_meta"] = a.Meta
	}
	params, _ := json.Marshal(call)
	return params
}
