package sessionless

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the gateway's calls in rounds (host/gateway/rounds.go) need that
// knows no gateway: the input_required result, the refusal of a state,
// the names of requests and replicas, the answers, and the holds on the
// sessions of requests whose calls outlive them.

// InputRequired is a result of protocol 2026-07-28 that asks the client
// for input (SEP-2322), for any of the three requests that may. The
// go-sdk's result types keep their resultType to themselves, so mcphost
// encodes its own.
type InputRequired struct {
	mcp.ResultBase
	ResultType    string              `json:"resultType"`
	InputRequests mcp.InputRequestMap `json:"inputRequests"`
	RequestState  string              `json:"requestState"`
}

// StateError refuses a retry whose requestState names no call of its own;
// the JSON-RPC error goes to the client as it is.
type StateError struct{ RPC *jsonrpc.Error }

func (e StateError) Error() string { return e.RPC.Error() }
func (e StateError) Unwrap() error { return e.RPC }

// RoundKey names a request for its rounds: method and name (tools/call,
// prompts/get) or URI (resources/read).
func RoundKey(method, name string) string { return method + " " + name }

// ReplicaHeader is the request header in which a load balancer names the
// replica it sent the request to (HAProxy: http-send-name-header).
const ReplicaHeader = "X-Mcphost-Replica"

// ReplicaRoute returns the replica name that req's X-Mcphost-Replica
// header gives, for the requestStates of its rounds; "" when there is
// none, or when it is not 1 to 64 letters, digits, '-' or '_' (a name that
// could not be read back from the state unambiguously).
func ReplicaRoute(req mcp.Request) string {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return ""
	}
	name := extra.Header.Get(ReplicaHeader)
	if len(name) == 0 || len(name) > 64 {
		return ""
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return ""
		}
	}
	return name
}

// AnswerAs returns a, a client's answer to a question of method
// (sampling/createMessage, elicitation/create, roots/list), as the result
// the upstream that asked gets; nil when a is not of the method's type.
func AnswerAs(method string, a mcp.InputResponse) mcp.Result {
	switch method {
	case "sampling/createMessage":
		if r, _ := a.(*mcp.CreateMessageWithToolsResult); r != nil {
			return r
		}
	case "elicitation/create":
		if r, _ := a.(*mcp.ElicitResult); r != nil {
			return r
		}
	case "roots/list":
		if r, _ := a.(*mcp.ListRootsResult); r != nil {
			return r
		}
	}
	return nil
}

// DecodeAnswer reads an answer a requestState carried (Answer.Response).
func DecodeAnswer(b json.RawMessage) (mcp.InputResponse, error) {
	var m mcp.InputResponseMap
	if err := json.Unmarshal(append(append([]byte(`{"a":`), b...), '}'), &m); err != nil {
		return nil, fmt.Errorf("sessionless: an answer the requestState carried: %w", err)
	}
	return m["a"], nil
}

// Holds keep what a sessionless request's session holds upstream (its
// per-client upstream sessions) while a call in rounds it started runs
// past it: that session ends with the request, and its end would close
// the upstream session the call is waiting on.
type Holds struct {
	mu sync.Mutex
	m  map[*mcp.ServerSession]*hold
}

type hold struct {
	calls int
	ended func() // the session's end, put off until the last call ends
}

// Hold holds ss for a call until release is called.
func (r *Holds) Hold(ss *mcp.ServerSession) (release func()) {
	if ss == nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[*mcp.ServerSession]*hold{}
	}
	hd := r.m[ss]
	if hd == nil {
		hd = &hold{}
		r.m[ss] = hd
	}
	hd.calls++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			hd.calls--
			var ended func()
			if hd.calls == 0 {
				delete(r.m, ss)
				ended = hd.ended
			}
			r.mu.Unlock()
			if ended != nil {
				ended()
			}
		})
	}
}

// PutOff reports whether ss is held, in which case end runs when the last
// call holding it ends.
func (r *Holds) PutOff(ss *mcp.ServerSession, end func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	hd := r.m[ss]
	if hd == nil {
		return false
	}
	hd.ended = end
	return true
}
