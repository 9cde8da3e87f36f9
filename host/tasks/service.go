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
)

// Version is the protocol version that defines the tasks methods.
const Version = "2025-11-25"

// MaxBody is the longest request body the Service reads to look for a
// task request; a longer one goes on unread.
const MaxBody = 64 << 10

// Sessions is what the Service needs of the gateway.
type Sessions interface {
	// Owner returns whose tasks the established streamable HTTP session
	// sid may reach (the caller's identity, or the session itself), and
	// whether it negotiated Version.
	Owner(sid string) (owner string, ok bool)
	// Admit admits a tools/call of session sid as the gateway admits any
	// call. When the call ended there (unknown tool, refused, over quota)
	// run is nil and res or rerr is its answer; otherwise run forwards it
	// and returns its outcome (and must be called exactly once).
	Admit(ctx context.Context, sid string, p *CallParams) (run func(context.Context) Outcome, res json.RawMessage, rerr *jsonrpc.Error)
}

// Service answers the task requests of established sessions, ahead of
// the go-sdk's streamable HTTP handler, which knows neither the tasks
// methods nor params.task.
type Service struct {
	IDs      *IDs
	Runner   *Runner
	Sessions Sessions
	Log      hclog.Logger // nil discards
}

// Handler serves task requests and hands every other request to next.
func (s *Service) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
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
		owner, ok := s.Sessions.Owner(sid)
		if !ok {
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
			res, rerr = s.start(r.Context(), sid, owner, p)
		case TaskMethod(req.Method):
			res, rerr = s.method(r.Context(), owner, req)
		default:
			next.ServeHTTP(w, r)
			return
		}
		writeResponse(w, sid, req.ID, res, rerr)
	})
}

func invalidParams(err error) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}

// start admits the call (a refusal is answered as for a plain call, with
// no task) and runs the rest as a task.
func (s *Service) start(ctx context.Context, sid, owner string, p *CallParams) (json.RawMessage, *jsonrpc.Error) {
	if err := s.Runner.Room(owner); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	run, res, rerr := s.Sessions.Admit(ctx, sid, p)
	if run == nil {
		return res, rerr
	}
	started := make(chan struct{})
	t, err := s.Runner.Start(owner, p.Task.TTL, func(ctx context.Context) Outcome {
		<-started
		return run(ctx)
	}, nil)
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
	s.logger().Debug("call runs as a task", "tool", p.Name, "session", sid)
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
func (s *Service) method(ctx context.Context, owner string, req *Request) (json.RawMessage, *jsonrpc.Error) {
	if req.Method == "tasks/list" {
		if _, err := DecodeCursor(req.Params); err != nil {
			return nil, invalidParams(err)
		}
		list := s.Runner.List(owner)
		for i := range list {
			list[i] = s.public(owner, list[i])
		}
		return encode(map[string]any{"tasks": list})
	}
	id, err := DecodeTaskID(req.Params)
	if err != nil {
		return nil, invalidParams(err)
	}
	ref, err := s.IDs.Decode(owner, id)
	if err == nil && ref.Server != "" {
		err = ErrUnknownTask // not one of the Runner's
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
		e, _ := encode(map[string]any{"code": rerr.Code, "message": rerr.Message})
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
	hdr.Set("Mcp-Session-Id", sid)
	_, _ = w.Write(b.Bytes())
}

// WithCapability offers tasks in an initialize result of Version (other
// results are returned as they are): the go-sdk's capabilities type has
// no member for them, so the result is one that encodes them.
func WithCapability(res *mcp.InitializeResult) mcp.Result {
	if res == nil || res.ProtocolVersion != Version {
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
