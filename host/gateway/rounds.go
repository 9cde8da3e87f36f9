package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/sessionless"
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
// A requestState is sealed under a key the replicas share (Options.
// RoundStateKey; package sessionless has the form): it is good, within
// roundTimeout, for a retry by the identity that started the call, of the
// same request (method, name or URI, and arguments). The call waits in the
// memory of the replica that answered; past roundTimeout it is cancelled.
// The retry is best sent there: a request that names the replica it was
// sent to, in the header X-Mcphost-Replica (HAProxy's
// http-send-name-header; deploy/haproxy.cfg), gets a requestState that
// starts with that name and a dot: "mcphost2.v1:...", which the balancer
// reads back from the retry's body (docs/DEPLOY.md). A retry that reaches
// another replica (the one that answered is gone, say) runs the call again
// there, from the start, with the answers the state carries (replay).

// roundTimeout is how long a call waits for its client to come back with
// answers.
const roundTimeout = 5 * time.Minute

// inRounds answers a call of a 2026-07-28 client: a new one, which run
// makes (on its own goroutine, with a context that outlives ctx), or, when
// state is set, the retry of one waiting for the answers. args are the
// request's arguments (its states hold their Digest); route is its
// sessionless.ReplicaRoute.
func (h *Host) inRounds(ctx context.Context, ss *mcp.ServerSession, caller abi.Caller, owner, what string, args any, route, state string, answers mcp.InputResponseMap, run func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	var known []sessionless.Answer
	if state != "" {
		st, err := h.rounds.Open(state)
		if err == nil && (st.Owner != owner || st.What != what || st.Args != sessionless.Digest("args", args)) {
			if rc := h.rounds.Take(st.Call); rc != nil {
				rc.Cancel() // a state is good only for its own request
			}
			err = sessionless.ErrState
		}
		if err != nil || h.rounds.Use(st.Call) {
			return nil, sessionless.StateError{RPC: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: unknown or expired requestState (it is good for one retry of the same request, for %s)", what, roundTimeout)}}
		}
		if rc := h.rounds.Take(st.Call); rc != nil {
			rc.SetRoute(route)
			rc.Answer(answers)
			return h.awaitRound(ctx, rc)
		}
		// Another replica holds the call (or did): it runs again here,
		// each question it asks again answered as the client answered it.
		known = append(known, st.Answers...)
		for id, digest := range st.Asked {
			if b, err := json.Marshal(answers[id]); err == nil && answers[id] != nil {
				known = append(known, sessionless.Answer{Question: digest, Response: b})
			}
		}
	}
	// The call outlives this request (it may wait for answers in a later
	// one), keeping its values (identity, trace).
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rc := sessionless.NewRound(callCtx, cancel, caller, owner, what, args, route, known)
	// ss, the first request's session, ends with that request; the
	// upstream sessions the call uses stay until the call ends.
	release := h.roundHolds.Hold(ss)
	h.roundWorkers.Go(func() {
		var res mcp.Result
		var err error
		defer release()
		defer func() {
			if r := recover(); r != nil {
				h.log.Error("panic in a call in rounds", "request", what, "panic", r, "stack", string(debug.Stack()))
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error handling " + what}
			}
			cancel()
			rc.Finish(res, err)
		}()
		res, err = run(sessionless.WithRound(callCtx, rc))
	})
	return h.awaitRound(ctx, rc)
}

// awaitRound waits for rc to end or ask something, and answers the round:
// its result, or input_required with the questions and a state naming the
// call, parked here. The client going away ends the call.
func (h *Host) awaitRound(ctx context.Context, rc *sessionless.Round) (mcp.Result, error) {
	res, asked, st, route, err := rc.Wait(ctx)
	if asked == nil {
		return res, err
	}
	state, err := h.rounds.Park(rc, rc.Cancel, route, st)
	if err != nil {
		rc.Cancel()
		return nil, err
	}
	return &sessionless.InputRequired{ResultType: "input_required", InputRequests: asked, RequestState: state}, nil
}

// askInRounds puts an upstream's sampling, elicitation or roots request
// during a call in rounds to its client, and returns the client's answer
// as the upstream's result.
func (h *Host) askInRounds(ctx context.Context, cs *mcp.ClientSession, rc *sessionless.Round, method string, req mcp.InputRequest) (mcp.Result, error) {
	a, err := rc.Ask(ctx, req)
	// Put to another call of the same client's that is still running (a
	// per-client session's calls, roundCaller), the question is asked
	// again there when that call ended first.
	for errors.Is(err, sessionless.ErrRoundEnded) {
		_, _, next := h.calls.roundCaller(cs, rc)
		if next == nil {
			break
		}
		rc = next
		a, err = rc.Ask(ctx, req)
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("downstream client: %v", err)}
	}
	res := sessionless.AnswerAs(method, a)
	if res == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("downstream client answered %s with a %T", method, a)}
	}
	return res, nil
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
