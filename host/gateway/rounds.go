package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// Protocol 2026-07-28 has no server-to-client requests. A server that needs
// the client's LLM, user or roots during a call answers the call with an
// input_required result: the questions (inputRequests) and an opaque
// requestState; the client answers them and calls again with its answers
// (inputResponses) and that state (SEP-2322, multi round-trip requests).
//
// Upstreams speak 2025-11-25, where they ask in the middle of the call and
// wait. So a tools/call, prompts/get or resources/read of a 2026-07-28
// client (the three requests the revision lets answer input_required; "the
// call" below) runs in rounds: the upstream call runs on its own, outliving
// the HTTP request that started it; each
// round (the first request, then each retry) waits until the call ends,
// and answers its result, or until the upstream asks something, and answers
// input_required with the questions asked so far and a new requestState
// naming the waiting call. A retry delivers the answers to the questions
// the upstream is waiting on, and waits again.
//
// A requestState is good for one retry, by the identity that started the
// call, of the same request (method and name or URI), within roundTimeout;
// past that the call is
// cancelled. It lives in this process's memory: a retry that reaches
// another replica is refused as unknown. So that a load balancer can send
// the retry to the replica that holds the call, a request that names the
// replica it was sent to, in the header X-Mcphost-Replica (HAProxy's
// http-send-name-header; deploy/haproxy.cfg), gets a requestState that
// starts with that name and a dot: "mcphost2.3f9c...". The balancer reads
// the name back from the retry's body (docs/DEPLOY.md).

// roundTimeout is how long a call waits for its client to come back with
// answers.
const roundTimeout = 5 * time.Minute

// inputRequired is a result of protocol 2026-07-28 that asks the client for
// input (SEP-2322), for any of the three requests. The go-sdk's result
// types keep their resultType to themselves, so mcphost encodes its own.
type inputRequired struct {
	mcp.ResultBase
	ResultType    string              `json:"resultType"`
	InputRequests mcp.InputRequestMap `json:"inputRequests"`
	RequestState  string              `json:"requestState"`
}

// roundCall is a call of a 2026-07-28 client in rounds.
type roundCall struct {
	owner  string // identity key of the caller ("" for none)
	what   string // the request: method and name or URI (roundKey)
	route  string // the balancer's name for this replica, from the latest round's request ("" for none)
	caller abi.Caller
	ctx    context.Context // the call's; done when it is cancelled
	cancel context.CancelFunc

	mu       sync.Mutex
	next     int
	unsent   map[string]*question // asked by the upstream, not yet sent to the client
	sent     map[string]*question // sent in an input_required result, not yet answered
	finished bool
	res      mcp.Result
	err      error
	wake     chan struct{} // a question came or the call finished; buffered 1
}

type question struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse // buffered 1
}

type roundCallKey struct{}

// roundCallFrom returns the call in rounds whose upstream request ctx
// belongs to, or nil.
func roundCallFrom(ctx context.Context) *roundCall {
	rc, _ := ctx.Value(roundCallKey{}).(*roundCall)
	return rc
}

func (rc *roundCall) poke() {
	select {
	case rc.wake <- struct{}{}:
	default:
	}
}

// ask puts a question of the upstream to the client and waits for its
// answer, for ctx (the upstream's request) or the call to end.
func (rc *roundCall) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	q := &question{req: req, answer: make(chan mcp.InputResponse, 1)}
	rc.mu.Lock()
	rc.next++
	id := fmt.Sprintf("mcphost-%d", rc.next)
	rc.unsent[id] = q
	rc.mu.Unlock()
	rc.poke()
	defer func() {
		rc.mu.Lock()
		delete(rc.unsent, id)
		delete(rc.sent, id)
		rc.mu.Unlock()
	}()
	select {
	case a := <-q.answer:
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-rc.ctx.Done():
		if rc.ended() {
			return nil, errRoundEnded
		}
		return nil, errors.New("the client did not come back with an answer in time")
	}
}

// errRoundEnded is ask's error when the call it was put to ended before
// its client answered.
var errRoundEnded = errors.New("the call that took the question ended before its client answered")

// ended reports whether the call has finished.
func (rc *roundCall) ended() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.finished
}

func (rc *roundCall) finish(res mcp.Result, err error) {
	rc.mu.Lock()
	rc.finished, rc.res, rc.err = true, res, err
	rc.mu.Unlock()
	rc.poke()
}

// answer hands the client's answers to the questions waiting for them; a
// question it left unanswered is asked again in the next round.
func (rc *roundCall) answer(answers mcp.InputResponseMap) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, q := range rc.sent {
		if a, ok := answers[id]; ok && a != nil {
			q.answer <- a
		} else {
			rc.unsent[id] = q
		}
		delete(rc.sent, id)
	}
}

// roundCalls are the calls waiting for their clients, by requestState.
type roundCalls struct {
	mu sync.Mutex
	m  map[string]*roundCall
}

// park keeps rc until its client comes back with the returned state, or
// for roundTimeout, after which the call is cancelled. The state starts
// with route and a dot when the round's request named this replica.
func (t *roundCalls) park(rc *roundCall, route string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	state := hex.EncodeToString(b[:])
	if route != "" {
		state = route + "." + state
	}
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[string]*roundCall)
	}
	t.m[state] = rc
	t.mu.Unlock()
	time.AfterFunc(roundTimeout, func() {
		if t.take(state) == rc {
			rc.cancel()
		}
	})
	return state
}

// cancelAll cancels every waiting call (the host is closing).
func (t *roundCalls) cancelAll() {
	t.mu.Lock()
	m := t.m
	t.m = nil
	t.mu.Unlock()
	for _, rc := range m {
		rc.cancel()
	}
}

// waiting reports how many calls wait for their clients' next round
// (Drain waits for them as for requests in flight).
func (t *roundCalls) waiting() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

func (t *roundCalls) take(state string) *roundCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	rc := t.m[state]
	delete(t.m, state)
	return rc
}

// errRequestState refuses a retry whose requestState names no call of its
// own; the JSON-RPC error goes to the client as it is.
type errRequestState struct{ rpc *jsonrpc.Error }

func (e errRequestState) Error() string { return e.rpc.Error() }
func (e errRequestState) Unwrap() error { return e.rpc }

// roundKey names a request for its rounds: method and name (tools/call,
// prompts/get) or URI (resources/read).
func roundKey(method, name string) string { return method + " " + name }

// replicaHeader is the request header in which a load balancer names the
// replica it sent the request to (HAProxy: http-send-name-header).
const replicaHeader = "X-Mcphost-Replica"

// replicaRoute returns the replica name that req's X-Mcphost-Replica
// header gives, for the requestStates of its rounds; "" when there is
// none, or when it is not 1 to 64 letters, digits, '-' or '_' (a name that
// could not be read back from the state unambiguously).
func replicaRoute(req mcp.Request) string {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return ""
	}
	name := extra.Header.Get(replicaHeader)
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

// inRounds answers a call of a 2026-07-28 client: a new one, which run
// makes (on its own goroutine, with a context that outlives ctx), or, when
// state is set, the retry of one waiting for the answers. route is the
// request's replicaRoute.
func (h *Host) inRounds(ctx context.Context, ss *mcp.ServerSession, caller abi.Caller, owner, what, route, state string, answers mcp.InputResponseMap, run func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	if state != "" {
		rc := h.rounds.take(state)
		if rc == nil || rc.owner != owner || rc.what != what {
			if rc != nil {
				rc.cancel() // a state is good for one retry, and only its own
			}
			return nil, errRequestState{&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: unknown or expired requestState (it is good for one retry of the same request, for %s)", what, roundTimeout)}}
		}
		rc.mu.Lock()
		rc.route = route
		rc.mu.Unlock()
		rc.answer(answers)
		return h.awaitRound(ctx, rc)
	}
	// The call outlives this request (it may wait for answers in a later
	// one), keeping its values (identity, trace).
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rc := &roundCall{owner: owner, what: what, route: route, caller: caller, ctx: callCtx, cancel: cancel,
		unsent: map[string]*question{}, sent: map[string]*question{}, wake: make(chan struct{}, 1)}
	// ss, the first request's session, ends with that request; the
	// upstream sessions the call uses stay until the call ends.
	release := h.roundHolds.hold(ss)
	go func() {
		var res mcp.Result
		var err error
		defer release()
		defer func() {
			if r := recover(); r != nil {
				h.log.Error("panic in a call in rounds", "request", what, "panic", r, "stack", string(debug.Stack()))
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error handling " + what}
			}
			cancel()
			rc.finish(res, err)
		}()
		res, err = run(context.WithValue(callCtx, roundCallKey{}, rc))
	}()
	return h.awaitRound(ctx, rc)
}

// awaitRound waits for rc to end or ask something, and answers the round.
// The client going away ends the call.
func (h *Host) awaitRound(ctx context.Context, rc *roundCall) (mcp.Result, error) {
	for {
		rc.mu.Lock()
		if rc.finished {
			res, err := rc.res, rc.err
			rc.mu.Unlock()
			return res, err
		}
		if len(rc.unsent) > 0 {
			asked := make(mcp.InputRequestMap, len(rc.unsent))
			for id, q := range rc.unsent {
				asked[id] = q.req
				rc.sent[id] = q
				delete(rc.unsent, id)
			}
			route := rc.route
			rc.mu.Unlock()
			return &inputRequired{ResultType: "input_required", InputRequests: asked, RequestState: h.rounds.park(rc, route)}, nil
		}
		rc.mu.Unlock()
		select {
		case <-rc.wake:
		case <-ctx.Done():
			rc.cancel()
			return nil, ctx.Err()
		}
	}
}

// askInRounds puts an upstream's sampling, elicitation or roots request
// during a call in rounds to its client, and returns the client's answer
// as the upstream's result.
func (h *Host) askInRounds(ctx context.Context, cs *mcp.ClientSession, rc *roundCall, method string, req mcp.InputRequest) (mcp.Result, error) {
	a, err := rc.ask(ctx, req)
	// Put to another call of the same client's that is still running (a
	// per-client session's calls, roundCaller), the question is asked
	// again there when that call ended first.
	for errors.Is(err, errRoundEnded) {
		_, _, next := h.calls.roundCaller(cs, rc)
		if next == nil {
			break
		}
		rc = next
		a, err = rc.ask(ctx, req)
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("downstream client: %v", err)}
	}
	var res mcp.Result
	switch method {
	case "sampling/createMessage":
		res, _ = a.(*mcp.CreateMessageWithToolsResult)
	case "elicitation/create":
		res, _ = a.(*mcp.ElicitResult)
	case "roots/list":
		res, _ = a.(*mcp.ListRootsResult)
	}
	if isNilResult(res) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("downstream client answered %s with a %T", method, a)}
	}
	return res, nil
}

// isNilResult reports whether r is nil or a typed nil.
func isNilResult(r mcp.Result) bool {
	switch v := r.(type) {
	case nil:
		return true
	case *mcp.CreateMessageWithToolsResult:
		return v == nil
	case *mcp.ElicitResult:
		return v == nil
	case *mcp.ListRootsResult:
		return v == nil
	}
	return false
}

// usesRounds reports whether ss's requests that may ask the client run in
// rounds: those of a client of protocol 2026-07-28 or later.
func usesRounds(ss *mcp.ServerSession) bool {
	return ss != nil && wire.ProtocolOf(ss) >= wire.NewProtocolVersion
}

// asResult turns a typed result and error into an mcp.Result without a
// typed nil.
func asResult[R mcp.Result](res R, err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}

// roundHolds keep what a sessionless request's session holds upstream (its
// per-client upstream sessions) while a call in rounds it started runs
// past it: that session ends with the request, and its end would close
// the upstream session the call is waiting on.
type roundHolds struct {
	mu sync.Mutex
	m  map[*mcp.ServerSession]*roundHold
}

type roundHold struct {
	calls int
	ended func() // the session's end, put off until the last call ends
}

// hold holds ss for a call until release is called.
func (r *roundHolds) hold(ss *mcp.ServerSession) (release func()) {
	if ss == nil {
		return func() {}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[*mcp.ServerSession]*roundHold{}
	}
	hd := r.m[ss]
	if hd == nil {
		hd = &roundHold{}
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

// putOff reports whether ss is held, in which case end runs when the last
// call holding it ends.
func (r *roundHolds) putOff(ss *mcp.ServerSession, end func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	hd := r.m[ss]
	if hd == nil {
		return false
	}
	hd.ended = end
	return true
}
