package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/jsondiff"
)

// Step is what one plugin did on one hook of one call, in the words of an
// audit log (host/audit.Decision has the same fields, so one converts to
// the other). Only plugins that ran are told: a plugin without the hook,
// out of the call's scope or not for its caller has no step.
type Step struct {
	Plugin string
	Hook   string // abi.HookToolCall, abi.HookToolResult or abi.HookToolsList
	// Action is abi.ActionAllow, abi.ActionDeny, abi.ActionRewrite or
	// abi.ActionRespond on tool_call; StepChanged or StepUnchanged on
	// tool_result; abi.ActionDeny on tools_list (it hid tools); StepSkipped
	// on any hook when the plugin failed and on_error skipped it. A plugin
	// that failed closed is a deny, with its Error.
	Action string
	Reason string // a deny's, as the plugin gave it (or the failure's)
	// Paths are JSON pointers: the arguments a rewrite changed, or the
	// parts of a result a change touched ("/content/1",
	// "/structuredContent/rows/0/name", "/isError", "/_meta").
	Paths []string
	// Tools are the exposed names a tools_list hook hid.
	Tools []string
	Error string // the failure, on one line, when the plugin failed
}

// Actions of a Step besides the abi ones.
const (
	StepChanged   = "changed"   // tool_result: the plugin changed the result
	StepUnchanged = "unchanged" // tool_result: it left it as it was
	StepSkipped   = "skipped"   // it failed and on_error = "skip" skipped it
)

// MaxStepPaths bounds the paths of one Step; a change touching more lists
// the first ones in document order.
const MaxStepPaths = 32

func failedStep(p *Plugin, hook, action, reason string, err error) Step {
	return Step{Plugin: p.spec.Name, Hook: hook, Action: action, Reason: reason, Error: oneLine(err)}
}

// callStep describes a tool_call decision; args are the arguments the
// plugin was given.
func callStep(p *Plugin, args json.RawMessage, d *abi.CallDecision) Step {
	s := Step{Plugin: p.spec.Name, Hook: abi.HookToolCall, Action: d.Action}
	switch d.Action {
	case "":
		s.Action = abi.ActionAllow
	case abi.ActionDeny:
		s.Reason = d.Reason
	case abi.ActionRewrite:
		paths, err := argumentPaths(args, d.Arguments)
		if err != nil {
			s.Error = "comparing the arguments: " + err.Error()
		}
		s.Paths = paths
	}
	return s
}

// argumentPaths diffs arguments; absent arguments count as {}.
func argumentPaths(before, after json.RawMessage) ([]string, error) {
	if len(before) == 0 {
		before = json.RawMessage(`{}`)
	}
	if len(after) == 0 {
		after = json.RawMessage(`{}`)
	}
	paths, _, err := jsondiff.Paths(before, after, MaxStepPaths)
	return paths, err
}

// resultStep describes what a tool_result hook made of before (after is
// before itself when the plugin left it unchanged).
func resultStep(p *Plugin, before, after *abi.CallToolResult) Step {
	s := Step{Plugin: p.spec.Name, Hook: abi.HookToolResult, Action: StepUnchanged}
	if after == before {
		return s
	}
	paths, err := resultParts(before, after)
	switch {
	case err != nil:
		s.Action, s.Error = StepChanged, "comparing the results: "+err.Error()
	case len(paths) > 0:
		s.Action, s.Paths = StepChanged, paths
	}
	return s
}

// resultParts lists the parts of a result that differ: a content block by
// its index, structuredContent down to the value, and any other member by
// its name.
func resultParts(before, after *abi.CallToolResult) ([]string, error) {
	a, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(after)
	if err != nil {
		return nil, err
	}
	// Every leaf, to be folded below: the limit applies to the parts.
	paths, _, err := jsondiff.Paths(a, b, 0)
	if err != nil {
		return nil, err
	}
	var parts []string
	seen := map[string]bool{}
	for _, path := range paths {
		part := resultPart(path)
		if !seen[part] {
			seen[part] = true
			parts = append(parts, part)
		}
		if len(parts) == MaxStepPaths {
			break
		}
	}
	return parts, nil
}

// resultPart folds a pointer into a result to the part an operator reads:
// "/content/2/text" is content block 2, "/_meta/x" is "/_meta";
// structuredContent keeps its whole path.
func resultPart(path string) string {
	tokens := strings.SplitN(path, "/", 4) // "", member, index or key, rest
	switch {
	case len(tokens) < 2:
		return path
	case tokens[1] == "structuredContent":
		return path
	case tokens[1] == "content" && len(tokens) >= 3:
		return "/content/" + tokens[2]
	}
	return "/" + tokens[1]
}

// listSteps turns what the tools_list hooks did into one step per plugin
// that hid tools, for toolsListSteps.
func listSteps(step func(Step)) func(p *Plugin, before, after []abi.Tool) {
	type key struct{ server, tool string }
	return func(p *Plugin, before, after []abi.Tool) {
		kept := make(map[key]bool, len(after))
		for _, t := range after {
			kept[key{t.Server, t.Tool}] = true
		}
		var hidden []string
		for _, t := range before {
			if !kept[key{t.Server, t.Tool}] {
				hidden = append(hidden, t.Name)
			}
		}
		if len(hidden) > 0 {
			step(Step{Plugin: p.spec.Name, Hook: abi.HookToolsList, Action: abi.ActionDeny, Tools: hidden})
		}
	}
}

// oneLine is err's text on one bounded line, for a log field.
func oneLine(err error) string {
	if err == nil {
		return ""
	}
	var pe *PolicyError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// ToolCallSteps is ToolCall, telling step what each plugin that ran
// decided, in order.
func (c *Chain) ToolCallSteps(ctx context.Context, in *abi.ToolCallInput, step func(Step)) (*abi.CallDecision, error) {
	return held(c, func() (*abi.CallDecision, error) { return c.toolCallSteps(ctx, in, step) })
}

// ToolResultSteps is ToolResult, telling step what each plugin that ran
// did to the result, in order.
func (c *Chain) ToolResultSteps(ctx context.Context, in *abi.ToolResultInput, step func(Step)) (*abi.CallToolResult, error) {
	return held(c, func() (*abi.CallToolResult, error) { return c.toolResultSteps(ctx, in, step) })
}

// ToolsListSteps is ToolsList, telling step which tools each plugin hid.
func (c *Chain) ToolsListSteps(ctx context.Context, in *abi.ToolsListInput, step func(Step)) ([]abi.Tool, error) {
	return held(c, func() ([]abi.Tool, error) { return c.toolsListSteps(ctx, in, listSteps(step)) })
}

// ToolCallSteps is ToolCall on the current generation, with its steps.
func (m *Manager) ToolCallSteps(ctx context.Context, in *abi.ToolCallInput, step func(Step)) (*abi.CallDecision, error) {
	return onCurrent(m, &abi.CallDecision{Action: abi.ActionAllow}, func(c *Chain) (*abi.CallDecision, error) {
		return c.toolCallSteps(ctx, in, step)
	})
}

// ToolResultSteps is ToolResult on the current generation, with its steps.
func (m *Manager) ToolResultSteps(ctx context.Context, in *abi.ToolResultInput, step func(Step)) (*abi.CallToolResult, error) {
	return onCurrent(m, in.Result, func(c *Chain) (*abi.CallToolResult, error) { return c.toolResultSteps(ctx, in, step) })
}

// ToolsListSteps is ToolsList on the current generation, with its steps.
func (m *Manager) ToolsListSteps(ctx context.Context, in *abi.ToolsListInput, step func(Step)) ([]abi.Tool, error) {
	return onCurrent(m, nonNil(in.Tools), func(c *Chain) ([]abi.Tool, error) { return c.toolsListSteps(ctx, in, listSteps(step)) })
}
