package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sync"
)

// Status notifications (2025-11-25: "receivers MAY send
// notifications/tasks/status when a task's status changes"; the params
// are the task). The go-sdk's server session sends only the notifications
// it knows, and this is not one of them, so the Service writes them itself
// into the session's standalone event stream (GET /mcp), which it serves
// through a writer it shares with the go-sdk: one event at a time, each
// written whole. A session with no stream open at the time misses the
// notification; the client still polls, as the specification asks of it.
//
// A notification goes only to the session that created the task: the
// stream is found by the session id the task was created under, and the
// go-sdk's handler decides whether a GET may open that session's stream
// (mcphost binds a session to its identity); nothing is written into a
// stream it refused.
//
// Protocol 2026-07-28's tasks extension defines no status notification
// (a client polls tasks/get), so none is sent there.

// StatusMethod is the method of a task's status notification.
const StatusMethod = "notifications/tasks/status"

// streams are the open standalone event streams, by session id.
type streams struct {
	mu sync.Mutex
	by map[string]map[*eventStream]struct{}
}

func (s *streams) add(sid string, es *eventStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string]map[*eventStream]struct{}{}
	}
	if s.by[sid] == nil {
		s.by[sid] = map[*eventStream]struct{}{}
	}
	s.by[sid][es] = struct{}{}
}

func (s *streams) remove(sid string, es *eventStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.by[sid], es)
	if len(s.by[sid]) == 0 {
		delete(s.by, sid)
	}
}

// send writes event to every open stream of session sid and reports how
// many took it.
func (s *streams) send(sid string, event []byte) int {
	s.mu.Lock()
	open := make([]*eventStream, 0, len(s.by[sid]))
	for es := range s.by[sid] {
		open = append(open, es)
	}
	s.mu.Unlock()
	n := 0
	for _, es := range open {
		if es.inject(event) {
			n++
		}
	}
	return n
}

// eventStream is the writer of a GET /mcp that the go-sdk answers; the
// go-sdk writes each event whole in one Write, so another event may go in
// between two of its Writes.
type eventStream struct {
	w      http.ResponseWriter
	mu     sync.Mutex
	status int  // 0 until the go-sdk answers
	events bool // its answer is an event stream
	done   bool // the handler returned: the writer is not to be used
}

// answered notes the go-sdk's answer as it starts; under e.mu.
func (e *eventStream) answered(code int) {
	if e.status == 0 {
		e.status = code
		e.events = isEventStream(e.w.Header().Get("Content-Type"))
	}
}

func (e *eventStream) Header() http.Header { return e.w.Header() }

func (e *eventStream) WriteHeader(code int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answered(code)
	e.w.WriteHeader(code)
}

func (e *eventStream) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answered(http.StatusOK)
	return e.w.Write(p)
}

func (e *eventStream) Flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answered(http.StatusOK)
	_ = http.NewResponseController(e.w).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (e *eventStream) Unwrap() http.ResponseWriter { return e.w }

// inject writes event, when the go-sdk opened the stream (200, an event
// stream) and has not closed it.
func (e *eventStream) inject(event []byte) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done || e.status != http.StatusOK || !e.events {
		return false
	}
	if _, err := e.w.Write(event); err != nil {
		return false
	}
	_ = http.NewResponseController(e.w).Flush()
	return true
}

func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// serveStream hands a GET of session sid to next, keeping its stream open
// to status notifications while next serves it.
func (s *Service) serveStream(next http.Handler, w http.ResponseWriter, r *http.Request, sid string) {
	es := &eventStream{w: w}
	s.streams.add(sid, es)
	defer func() {
		s.streams.remove(sid, es)
		es.mu.Lock()
		es.done = true
		es.mu.Unlock()
	}()
	next.ServeHTTP(es, r)
}

// statusNotifier returns what tells session sid of each change of
// owner's task (a Runner's notify): a status notification with the task
// under the client's id of it.
func (s *Service) statusNotifier(sid, owner string) func(Task) {
	if sid == "" {
		return nil
	}
	return func(t Task) { s.sendStatus(sid, s.public(owner, t)) }
}

// sendStatus writes a status notification of params to session sid's
// event streams.
func (s *Service) sendStatus(sid string, params any) {
	body, rerr := encode(map[string]any{"jsonrpc": "2.0", "method": StatusMethod, "params": params})
	if rerr != nil {
		return
	}
	var event bytes.Buffer
	event.WriteString("event: message\ndata: ")
	event.Write(body)
	event.WriteString("\n\n")
	n := s.streams.send(sid, event.Bytes())
	s.logger().Trace("task status sent", "streams", n)
}

// UpstreamStatus forwards a server's notifications/tasks/status (params
// as sent, read on conn) to the session that created the task it names,
// under mcphost's id of it: only for a task held for that server and
// asked of it on that connection, and only when exactly one is (a server
// may number its tasks per connection).
func (s *Service) UpstreamStatus(server string, conn any, params json.RawMessage) {
	t, upID, err := DecodeStatus(params)
	if err != nil {
		s.logger().Debug("a server's task status notification is not one", "server", server, "error", err)
		return
	}
	found := s.Runner.heldWhere(func(v any) bool {
		u, ok := v.(upstreamTask)
		return ok && u.server == server && u.id == upID && u.conn != nil && u.conn == conn
	})
	if len(found) != 1 {
		return // not a task of mcphost's client (or not one only)
	}
	u := found[0].(upstreamTask)
	if u.sid == "" {
		return
	}
	t["taskId"], _ = json.Marshal(u.public)
	s.sendStatus(u.sid, t)
}

// NoteConn records, for a task request's Upstream.Send, the connection
// to the server it went on (the server's status notifications of the task
// come on it); ctx is the one Send was given.
func NoteConn(ctx context.Context, conn any) {
	if slot, ok := ctx.Value(connKey{}).(*connSlot); ok {
		slot.mu.Lock()
		slot.conn = conn
		slot.mu.Unlock()
	}
}

type connKey struct{}

// connSlot takes the connection a Send went on (NoteConn).
type connSlot struct {
	mu   sync.Mutex
	conn any
}

func (s *connSlot) get() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// DecodeStatus reads a server's notifications/tasks/status params: the
// task's members, without the server's own tie to the task in _meta, and
// its id there.
func DecodeStatus(params json.RawMessage) (map[string]json.RawMessage, string, error) {
	var t map[string]json.RawMessage
	if err := json.Unmarshal(dropRelatedTask(params), &t); err != nil {
		return nil, "", fmt.Errorf("tasks: status params: %w", err)
	}
	var id string
	if err := json.Unmarshal(t["taskId"], &id); err != nil || id == "" {
		return nil, "", errors.New("tasks: status params: taskId is missing or not a string")
	}
	return t, id, nil
}
