package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The statuses of a task (2025-11-25, basic/utilities/tasks).
const (
	Working       = "working"
	InputRequired = "input_required"
	Completed     = "completed"
	Failed        = "failed"
	Cancelled     = "cancelled"
)

// Terminal reports whether status is one a task never leaves.
func Terminal(status string) bool {
	return status == Completed || status == Failed || status == Cancelled
}

// RelatedTaskKey is the _meta key that ties a message to its task.
const RelatedTaskKey = "io.modelcontextprotocol/related-task"

// Task is a task as the protocol describes it: the result of tasks/get and
// tasks/cancel, an element of tasks/list, the task of a CreateTaskResult
// and the params of notifications/tasks/status.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTL is how long, in milliseconds from its creation, the task and
	// its result are kept; null for no limit (mcphost's own always have one).
	TTL          *int64 `json:"ttl"`
	PollInterval *int64 `json:"pollInterval,omitempty"`
}

// Stamp formats a time as tasks' timestamps are (ISO 8601, UTC).
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Request is a JSON-RPC request as a client sends it to /mcp.
type Request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// TaskMethod reports whether method is one of the tasks methods.
func TaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel":
		return true
	}
	return false
}

// ErrNotRequest says a body is not one JSON-RPC request.
var ErrNotRequest = errors.New("tasks: not a JSON-RPC request")

// DecodeRequest reads one JSON-RPC request (not a batch, not a
// notification, not a response). A body it refuses is left to the go-sdk,
// which answers it as it answers any.
func DecodeRequest(body []byte) (*Request, error) {
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRequest, err)
	}
	id := bytes.TrimSpace(r.ID)
	if r.JSONRPC != "2.0" || r.Method == "" || len(id) == 0 || bytes.Equal(id, []byte("null")) {
		return nil, ErrNotRequest
	}
	if c := id[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
		return nil, fmt.Errorf("%w: the id is neither a string nor a number", ErrNotRequest)
	}
	return &Request{ID: id, Method: r.Method, Params: r.Params}, nil
}

// CallParams are the params of a tools/call that may ask for a task.
type CallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
	// Task is present when the client asks for a task.
	Task *TaskParams `json:"task,omitempty"`
	// MetaMap is Meta decoded, without the progress token (the request
	// it names ends when the task is created).
	MetaMap map[string]any `json:"-"`
}

// TaskParams is a request's task augmentation.
type TaskParams struct {
	TTL *int64 `json:"ttl,omitempty"` // milliseconds
}

// DecodeCall reads tools/call params. ok is false for params without a
// task (the ordinary call), which the caller leaves to the usual path.
func DecodeCall(params json.RawMessage) (p *CallParams, ok bool, err error) {
	p = new(CallParams)
	if err := json.Unmarshal(params, p); err != nil {
		return nil, false, fmt.Errorf("tasks: tools/call params: %w", err)
	}
	if p.Task == nil {
		return p, false, nil
	}
	if p.Name == "" {
		return nil, false, errors.New("tasks: tools/call params: name is missing")
	}
	if p.Task.TTL != nil && *p.Task.TTL < 0 {
		return nil, false, errors.New("tasks: tools/call params: task.ttl is negative")
	}
	if len(p.Meta) > 0 {
		if err := json.Unmarshal(p.Meta, &p.MetaMap); err != nil {
			return nil, false, errors.New("tasks: tools/call params: _meta is not an object")
		}
		delete(p.MetaMap, "progressToken")
	}
	return p, true, nil
}

// DecodeTaskID reads the taskId of tasks/get, tasks/result and
// tasks/cancel params.
func DecodeTaskID(params json.RawMessage) (string, error) {
	var p struct {
		TaskID *string `json:"taskId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", fmt.Errorf("tasks: params: %w", err)
	}
	if p.TaskID == nil || *p.TaskID == "" {
		return "", errors.New("tasks: params: taskId is missing")
	}
	return *p.TaskID, nil
}

// DecodeCursor reads the cursor of tasks/list params (absent params are
// the first page).
func DecodeCursor(params json.RawMessage) (string, error) {
	if p := bytes.TrimSpace(params); len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return "", nil
	}
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", fmt.Errorf("tasks: params: %w", err)
	}
	return p.Cursor, nil
}
