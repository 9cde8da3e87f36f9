package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/paramheader"
)

// Protocol 2026-07-28 has no sessions and no tasks of its own: tasks are
// the io.modelcontextprotocol/tasks extension (SEP-2663). A client that
// declares it in a tools/call's per-request capabilities may be answered
// with a task (resultType "task") instead of a result, and then polls
// tasks/get (which carries the result or the error once the task ends),
// answers the task's questions with tasks/update and cancels it with
// tasks/cancel; there is no tasks/list nor tasks/result.
//
// mcphost runs every such task itself (Runner): a call that has not ended
// after Limits.After becomes a task; one that ends sooner is answered as
// any call. For a server that offers 2025-11-25 tasks, the task's body
// asks it for a task and waits on its tasks/result, so both shapes meet
// here. The questions of a task are not carried: an upstream's
// elicitation or sampling during such a task has no client to reach (the
// protocol has no server-to-client requests outside a request's rounds),
// and the upstream is told so, as for a 2026-07-28 call today.

// Extension is the tasks extension's identifier.
const Extension = "io.modelcontextprotocol/tasks"

// WithExtension offers the extension in the capabilities of
// server/discover, when offer (mcphost serves it over streamable HTTP).
func WithExtension(caps *mcp.ServerCapabilities, offer bool) *mcp.ServerCapabilities {
	if offer {
		caps.AddExtension(Extension, nil)
	}
	return caps
}

// DecodeExtensionCall reads tools/call params of protocol 2026-07-28; ok
// reports whether the client declared the extension on the request.
func DecodeExtensionCall(params json.RawMessage) (p *CallParams, ok bool, err error) {
	p = new(CallParams)
	if err := json.Unmarshal(params, p); err != nil {
		return nil, false, fmt.Errorf("tasks: tools/call params: %w", err)
	}
	if p.Name == "" {
		return nil, false, errors.New("tasks: tools/call params: name is missing")
	}
	if !declares(p.Meta) {
		return p, false, nil
	}
	if err := json.Unmarshal(p.Meta, &p.MetaMap); err != nil {
		return nil, false, err
	}
	delete(p.MetaMap, "progressToken")
	p.Task = &TaskParams{}
	return p, true, nil
}

// declares reports whether a request's _meta declares the extension in its
// per-request client capabilities (an extension's settings are an object).
func declares(meta json.RawMessage) bool {
	var m struct {
		Caps *struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"io.modelcontextprotocol/clientCapabilities"`
	}
	return len(meta) > 0 && json.Unmarshal(meta, &m) == nil && m.Caps != nil &&
		bytes.HasPrefix(bytes.TrimSpace(m.Caps.Extensions[Extension]), []byte("{"))
}

// missingExtension refuses a tasks method to a request that does not
// declare the extension, as SEP-2575 has a server refuse a request that
// needs a client capability the request does not declare.
func missingExtension(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeMissingCapability, Data: missingExtensionData,
		Message: method + " needs the client capability extensions[\"" + Extension + "\"] in the request's _meta"}
}

// missingExtensionData is a -32021's data naming the extension
// (mcp.MissingRequiredClientCapabilityData as JSON).
var missingExtensionData = json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + Extension + `":{}}}}`)

// checkHeaders checks, as the go-sdk checks the requests it serves
// (SEP-2243), that a request of protocol 2026-07-28 repeats its method in
// Mcp-Method and its name in Mcp-Name: the tool's for tools/call, the task
// id for the tasks methods (SEP-2663's routing header).
func checkHeaders(h http.Header, method, name string) *jsonrpc.Error {
	if v := h.Get("Mcp-Protocol-Version"); v == "" || v < "2026-07-28" {
		return nil
	}
	switch {
	case h.Get("Mcp-Method") != method:
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("header mismatch: Mcp-Method %q does not match the body's method %q", h.Get("Mcp-Method"), method)}
	case h.Get("Mcp-Name") != name:
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("header mismatch: Mcp-Name %q does not match the body's %q", h.Get("Mcp-Name"), name)}
	}
	return nil
}

// Sessionless serves the extension's requests of protocol 2026-07-28 and
// hands every other request to next (the go-sdk's stateless handler).
func (s *Service) Sessionless(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.ContentLength <= 0 || r.ContentLength > MaxBody {
			next.ServeHTTP(w, r)
			return
		}
		body := make([]byte, r.ContentLength)
		n, err := io.ReadFull(r.Body, body)
		r.Body = io.NopCloser(bytes.NewReader(body[:n]))
		if err != nil || !bytes.Contains(body, []byte(`"tasks/`)) && !bytes.Contains(body, []byte(Extension)) {
			next.ServeHTTP(w, r)
			return
		}
		req, err := DecodeRequest(body)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		session, owner := s.Sessions.Owner(r)
		var res json.RawMessage
		var rerr *jsonrpc.Error
		switch req.Method {
		case "tools/call":
			p, ok, err := DecodeExtensionCall(req.Params)
			if err != nil || !ok {
				next.ServeHTTP(w, r) // the go-sdk answers as it answers any call it cannot read, or any call
				return
			}
			if rerr = checkHeaders(r.Header, req.Method, p.Name); rerr == nil {
				res, rerr = s.startExtension(paramheader.WithIncoming(r.Context(), r.Header), session, owner, p) // Mcp-Param-* checked at admission
			}
		case "tasks/get", "tasks/update", "tasks/cancel":
			var p struct {
				Meta   json.RawMessage `json:"_meta"`
				TaskID string          `json:"taskId"`
			}
			if json.Unmarshal(req.Params, &p) != nil || !declares(p.Meta) {
				rerr = missingExtension(req.Method)
			} else if rerr = checkHeaders(r.Header, req.Method, p.TaskID); rerr == nil {
				res, rerr = s.extensionMethod(owner, req)
			}
		default:
			next.ServeHTTP(w, r)
			return
		}
		writeResponse(w, "", req.ID, res, rerr)
	})
}

// startExtension admits the call, runs it as a task, and answers with its
// result if it ends within Limits.After, else with the task.
func (s *Service) startExtension(ctx context.Context, session any, owner string, p *CallParams) (json.RawMessage, *jsonrpc.Error) {
	if err := s.Runner.Room(owner); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	a := s.Sessions.Admit(AsTask(ctx), session, p)
	run := a.Run
	if a.Upstream != nil {
		run = upstreamRun(a)
	}
	if run == nil {
		if a.Err != nil {
			return nil, a.Err
		}
		return complete(a.Result)
	}
	run, rc := withRound(a, owner, p.Name, p.Arguments, run)
	t, err := s.Runner.Start(owner, nil, run, nil)
	if err != nil {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		go run(ctx) // to release what the admission took; it ends at once
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	s.Runner.setRound(owner, t.TaskID, rc)
	wait, cancel := context.WithTimeout(ctx, s.Runner.lim.After)
	defer cancel()
	go func() { // a question makes it a task at once: the client answers it through the task
		select {
		case <-rc.Asked():
			if !rc.Ended() {
				cancel()
			}
		case <-wait.Done():
		}
	}()
	if _, out, err := s.Runner.Result(wait, owner, t.TaskID); err == nil {
		s.Runner.Forget(owner, t.TaskID)
		if out.Err != nil {
			return nil, errorOf(out.Err)
		}
		return complete(out.Result)
	}
	s.logger().Debug("call became a task", "tool", p.Name)
	doc := s.extensionTask(owner, t, Outcome{}, false)
	doc["resultType"] = "task"
	return encode(doc)
}

// upstreamRun is the body of a task whose server runs it (2025-11-25):
// ask for the task, then wait on its result, which goes through the
// gateway's result policies. Cancelling the task cancels the server's.
func upstreamRun(a Admitted) func(context.Context) Outcome {
	return func(ctx context.Context) Outcome {
		raw, err := a.Upstream.Send(ctx, "tools/call", upstreamCall(a, &TaskParams{}))
		if err != nil {
			return Outcome{Err: upstreamError(err)}
		}
		var created struct {
			Task *struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		if json.Unmarshal(raw, &created) != nil || created.Task == nil || created.Task.TaskID == "" {
			return a.Upstream.Result(ctx, raw) // it answered at once
		}
		params, _ := json.Marshal(map[string]string{"taskId": created.Task.TaskID})
		for {
			raw, err = a.Upstream.Send(ctx, "tasks/result", params)
			// Each wait lasts at most the server's call timeout: wait again.
			if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
				break
			}
		}
		if ctx.Err() != nil {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, _ = a.Upstream.Send(ctx, "tasks/cancel", params)
			}()
			return Outcome{Err: ctx.Err()}
		}
		if err != nil {
			return Outcome{Err: upstreamError(err)}
		}
		return a.Upstream.Result(ctx, dropRelatedTask(raw))
	}
}

// dropRelatedTask removes the server's task id from a result's _meta:
// the client knows the task by mcphost's id only.
func dropRelatedTask(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	var meta map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || json.Unmarshal(m["_meta"], &meta) != nil || meta[RelatedTaskKey] == nil {
		return raw
	}
	delete(meta, RelatedTaskKey)
	if len(meta) == 0 {
		delete(m, "_meta")
	} else {
		m["_meta"], _ = json.Marshal(meta)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// complete marks a result of protocol 2026-07-28 as a complete one.
func complete(result json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil || m == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tasks: the result is not an object"}
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	return encode(m)
}

// extensionTask is a task in the extension's shape (DetailedTask): ttlMs
// and pollIntervalMs, and once it ended, its result or its error. A tool's
// own failure (isError) completes a task there; only a JSON-RPC error
// fails it.
func (s *Service) extensionTask(owner string, t Task, out Outcome, ended bool) map[string]any {
	doc := map[string]any{
		"taskId": s.public(owner, t).TaskID, "status": t.Status, "createdAt": t.CreatedAt,
		"lastUpdatedAt": t.LastUpdatedAt, "ttlMs": t.TTL, "pollIntervalMs": t.PollInterval,
	}
	if t.StatusMessage != "" {
		doc["statusMessage"] = t.StatusMessage
	}
	if !ended && t.Status == InputRequired {
		// Between the question's count and its arrival in the Round,
		// none is pending yet: still working.
		rc, _ := s.Runner.round(owner, t.TaskID)
		if q := inputRequests(rc); len(q) > 0 {
			doc["inputRequests"] = q
		} else {
			doc["status"] = Working
		}
	}
	switch {
	case !ended || t.Status == Cancelled:
	case out.Err != nil:
		e := errorOf(out.Err)
		doc["status"], doc["error"] = Failed, map[string]any{"code": e.Code, "message": e.Message}
	default:
		doc["status"], doc["result"] = Completed, out.Result
	}
	return doc
}

// extensionMethod answers tasks/get, tasks/update and tasks/cancel.
func (s *Service) extensionMethod(owner string, req *Request) (json.RawMessage, *jsonrpc.Error) {
	id, err := DecodeTaskID(req.Params)
	if err != nil {
		return nil, invalidParams(err)
	}
	ref, err := s.IDs.Decode(owner, id)
	if err != nil || ref.Server != "" {
		return nil, errorOf(ErrUnknownTask)
	}
	t, out, ended, err := s.Runner.Peek(owner, ref.ID)
	if err != nil {
		return nil, errorOf(err)
	}
	switch req.Method {
	case "tasks/get":
		doc := s.extensionTask(owner, t, out, ended)
		doc["resultType"] = "complete"
		return encode(doc)
	case "tasks/cancel":
		// Acknowledged even when it already ended: cancellation is
		// eventually consistent, and the task's state says how it ended.
		_, _ = s.Runner.Cancel(owner, ref.ID)
	case "tasks/update":
		if !ended {
			if rerr := s.update(owner, ref.ID, req.Params); rerr != nil {
				return nil, rerr
			}
		}
	}
	return json.RawMessage(`{"resultType":"complete"}`), nil
}
