package sessionless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
)

// Round is a call of a 2026-07-28 client in rounds (the gateway's
// rounds.go tells the whole story): the upstream call runs on its own, and
// each round of the client's (the first request, then each retry with
// answers) waits, in Wait, for the call to end or to ask something. The
// upstream's questions come through Ask, the client's answers through
// Answer.
type Round struct {
	owner  string // identity key of the caller ("" for none)
	what   string // the request: method and name or URI (RoundKey)
	args   any    // its arguments (their Digest goes in its states)
	caller abi.Caller
	ctx    context.Context // the call's; done when it is cancelled
	cancel context.CancelFunc

	mu       sync.Mutex
	route    string // the balancer's name for this replica, from the latest round's request ("" for none)
	next     int
	unsent   map[string]*question // asked by the upstream, not yet sent to the client
	sent     map[string]*question // sent in an input_required result, not yet answered
	finished bool
	res      mcp.Result
	err      error
	wake     chan struct{} // a question came or the call finished; buffered 1
	// answered are the client's answers so far, which each state carries;
	// known are those of them a call run again has not been asked yet,
	// by question Digest.
	answered []Answer
	known    map[string][]json.RawMessage
}

type question struct {
	req    mcp.InputRequest
	digest string                 // Digest of req
	answer chan mcp.InputResponse // buffered 1
}

// NewRound makes the round of a call that runs under ctx, ended by cancel.
// known are the answers a state from another replica carried: a question
// asked again is answered from them (replay).
func NewRound(ctx context.Context, cancel context.CancelFunc, caller abi.Caller, owner, what string, args any, route string, known []Answer) *Round {
	rc := &Round{owner: owner, what: what, args: args, route: route, caller: caller, ctx: ctx, cancel: cancel,
		unsent: map[string]*question{}, sent: map[string]*question{}, wake: make(chan struct{}, 1), answered: known}
	for _, a := range known {
		if rc.known == nil {
			rc.known = map[string][]json.RawMessage{}
		}
		rc.known[a.Question] = append(rc.known[a.Question], a.Response)
	}
	return rc
}

type roundKey struct{}

// WithRound returns ctx, for the upstream requests of rc's call.
func WithRound(ctx context.Context, rc *Round) context.Context {
	return context.WithValue(ctx, roundKey{}, rc)
}

// RoundFrom returns the call in rounds whose upstream request ctx belongs
// to, or nil.
func RoundFrom(ctx context.Context) *Round {
	rc, _ := ctx.Value(roundKey{}).(*Round)
	return rc
}

// Owner is the identity key of the caller ("" for none).
func (rc *Round) Owner() string { return rc.owner }

// Caller is who made the call.
func (rc *Round) Caller() abi.Caller { return rc.caller }

// Cancel ends the call.
func (rc *Round) Cancel() { rc.cancel() }

// SetRoute records the replica name of the latest round's request.
func (rc *Round) SetRoute(route string) {
	rc.mu.Lock()
	rc.route = route
	rc.mu.Unlock()
}

func (rc *Round) poke() {
	select {
	case rc.wake <- struct{}{}:
	default:
	}
}

// ErrRoundEnded is Ask's error when the call it was put to ended before
// its client answered.
var ErrRoundEnded = errors.New("the call that took the question ended before its client answered")

// Ask puts a question of the upstream to the client and waits for its
// answer, for ctx (the upstream's request) or the call to end.
func (rc *Round) Ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	q := &question{req: req, digest: Digest(fmt.Sprintf("%T", req), req), answer: make(chan mcp.InputResponse, 1)}
	rc.mu.Lock()
	if known := rc.known[q.digest]; len(known) > 0 {
		// Asked again, in a call run again: answered as it was.
		rc.known[q.digest] = known[1:]
		rc.mu.Unlock()
		return DecodeAnswer(known[0])
	}
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
		if rc.Ended() {
			return nil, ErrRoundEnded
		}
		return nil, errors.New("the client did not come back with an answer in time")
	}
}

// Ended reports whether the call has finished.
func (rc *Round) Ended() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.finished
}

// Finish records the call's end.
func (rc *Round) Finish(res mcp.Result, err error) {
	rc.mu.Lock()
	rc.finished, rc.res, rc.err = true, res, err
	rc.mu.Unlock()
	rc.poke()
}

// Answer hands the client's answers to the questions waiting for them; a
// question it left unanswered is asked again in the next round.
func (rc *Round) Answer(answers mcp.InputResponseMap) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, q := range rc.sent {
		if a, ok := answers[id]; ok && a != nil {
			if b, err := json.Marshal(a); err == nil {
				rc.answered = append(rc.answered, Answer{Question: q.digest, Response: b})
			}
			q.answer <- a
		} else {
			rc.unsent[id] = q
		}
		delete(rc.sent, id)
	}
}

// Wait waits for the call to end or ask something, for ctx (the round's
// request; its end cancels the call). When the call ended it returns its
// result; when it asked, the questions not yet sent, the state that
// carries them, and the route the state is to name.
func (rc *Round) Wait(ctx context.Context) (res mcp.Result, asked mcp.InputRequestMap, st *State, route string, err error) {
	for {
		rc.mu.Lock()
		if rc.finished {
			defer rc.mu.Unlock()
			return rc.res, nil, nil, "", rc.err
		}
		if len(rc.unsent) > 0 {
			asked = make(mcp.InputRequestMap, len(rc.unsent))
			st = &State{Owner: rc.owner, What: rc.what, Args: Digest("args", rc.args), Answers: slices.Clone(rc.answered), Asked: map[string]string{}}
			for id, q := range rc.unsent {
				asked[id], st.Asked[id] = q.req, q.digest
				rc.sent[id] = q
				delete(rc.unsent, id)
			}
			defer rc.mu.Unlock()
			return nil, asked, st, rc.route, nil
		}
		rc.mu.Unlock()
		select {
		case <-rc.wake:
		case <-ctx.Done():
			rc.cancel()
			return nil, nil, nil, "", ctx.Err()
		}
	}
}

// Pending returns the questions put to the client and not yet answered,
// for a round no one Waits on (a task's, whose client reads them from
// tasks/get, host/tasks).
func (rc *Round) Pending() mcp.InputRequestMap {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	m := make(mcp.InputRequestMap, len(rc.unsent)+len(rc.sent))
	for id, q := range rc.unsent {
		m[id] = q.req
	}
	for id, q := range rc.sent {
		m[id] = q.req
	}
	return m
}

// Respond hands each of answers to the pending question of its id, and
// returns how many it answered; an answer to no pending question is left
// alone. Unlike Answer, the questions it does not answer stay as they
// are, pending.
func (rc *Round) Respond(answers mcp.InputResponseMap) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for id, a := range answers {
		q := rc.unsent[id]
		if q == nil {
			q = rc.sent[id]
		}
		if q == nil || a == nil {
			continue
		}
		delete(rc.unsent, id)
		delete(rc.sent, id)
		q.answer <- a
		n++
	}
	return n
}

// Asked is poked when the call asks something or ends, for a round no one
// Waits on.
func (rc *Round) Asked() <-chan struct{} { return rc.wake }
