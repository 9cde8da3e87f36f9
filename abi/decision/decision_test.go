package decision_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
)

// A policy call made with a recorder in its context tells it what each
// plugin decided; one made without carries nothing to tell.
func ExampleWithRecorder() {
	var got []decision.Decision
	ctx := decision.WithRecorder(context.Background(), func(d decision.Decision) { got = append(got, d) })

	// What a policy made of several plugins does as each one answers.
	if record := decision.Recorder(ctx); record != nil {
		record(decision.Decision{Plugin: "no-delete", Hook: abi.HookToolCall, Action: decision.Allow})
		record(decision.Decision{Plugin: "defaults", Hook: abi.HookToolCall, Action: decision.Rewrite, Paths: []string{"/limit"}})
	}
	for _, d := range got {
		fmt.Println(d.Plugin, d.Hook, d.Action, d.Paths)
	}
	fmt.Println("recorder without WithRecorder:", decision.Recorder(context.Background()) != nil)
	// Output:
	// no-delete tool_call allow []
	// defaults tool_call rewrite [/limit]
	// recorder without WithRecorder: false
}

// The actions a tool_call hook answers are recorded in the ABI's words.
func TestActionsAreTheABIs(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{
		{decision.Allow, abi.ActionAllow},
		{decision.Deny, abi.ActionDeny},
		{decision.Rewrite, abi.ActionRewrite},
		{decision.Respond, abi.ActionRespond},
	} {
		if c[0] != c[1] {
			t.Errorf("decision %q, abi %q", c[0], c[1])
		}
	}
}
