package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/sessionless"
)

// Input inside a task of the extension (2026-07-28): the call runs as a
// call in rounds (host/sessionless) that no request Waits on. What its
// server asks the client (elicitation, sampling, roots) goes through the
// gateway as any round's question does (policies, the message hook) and
// waits in the Round; tasks/get shows the questions as inputRequests,
// keyed, with the task input_required, and tasks/update's inputResponses
// answer them. A question the client has not answered when the task is
// cancelled or its time to live ends is answered to the server with an
// error. The questions live in the process that runs the call: a
// tasks/update that reaches another replica is refused (route it by
// Mcp-Name, the task id, as the extension's header allows).

// withRound runs the call of a task in a Round of its own, and returns
// that Round; its question or its end pokes rc.Asked.
func withRound(a Admitted, owner, name string, args json.RawMessage, run func(context.Context) Outcome) (func(context.Context) Outcome, *sessionless.Round) {
	ctx, cancel := context.WithCancel(context.Background())
	rc := sessionless.NewRound(ctx, cancel, a.Caller, owner, name, args, "", nil)
	return func(runCtx context.Context) Outcome {
		stop := context.AfterFunc(runCtx, cancel) // cancelled or expired: its questions end
		defer stop()
		defer cancel()
		out := run(sessionless.WithRound(runCtx, rc))
		rc.Finish(nil, nil)
		return out
	}, rc
}

// ErrElsewhere says a task's questions are answered on another replica.
var ErrElsewhere = errors.New("tasks: this task runs on another replica, which holds its questions: send tasks/update with the task id in Mcp-Name so the balancer routes it there")

// inputRequests are rc's pending questions, as tasks/get shows them.
func inputRequests(rc *sessionless.Round) map[string]any {
	if rc == nil {
		return nil
	}
	m := map[string]any{}
	for id, q := range rc.Pending() {
		m[id] = map[string]any{"method": questionMethod(q), "params": q}
	}
	return m
}

// questionMethod is the method of a question of the upstream's.
func questionMethod(q mcp.InputRequest) string {
	switch q.(type) {
	case *mcp.ElicitParams:
		return "elicitation/create"
	case *mcp.ListRootsParams:
		return "roots/list"
	}
	return "sampling/createMessage"
}

// UpdateParams are tasks/update's params: the client's answers, keyed as
// tasks/get's inputRequests were, each as sent (DecodeUpdate).
type UpdateParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// DecodeUpdate decodes tasks/update's params, and of its responses those
// that are one of MCP's answers (elicitation, sampling, roots); others are
// left out, as answers to no question are (the extension ignores them).
func DecodeUpdate(raw json.RawMessage) (*UpdateParams, mcp.InputResponseMap, error) {
	var p UpdateParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, nil, fmt.Errorf("tasks: tasks/update params: %w", err)
	}
	answers := mcp.InputResponseMap{}
	for key, b := range p.InputResponses {
		if a, err := sessionless.DecodeAnswer(b); err == nil && a != nil {
			answers[key] = a
		}
	}
	return &p, answers, nil
}

// update answers tasks/update of owner's task id: each response reaches
// its question; responses to no pending question are ignored, as the
// extension asks. A task another replica runs is refused there.
func (s *Service) update(owner, id string, raw json.RawMessage) *jsonrpc.Error {
	_, answers, err := DecodeUpdate(raw)
	if err != nil {
		return invalidParams(err)
	}
	rc, here := s.Runner.round(owner, id)
	if !here && len(answers) > 0 {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ErrElsewhere.Error()}
	}
	if rc != nil {
		rc.Respond(answers)
	}
	return nil
}
