package plugins

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
	"github.com/mcphost-project/mcphost/internal/jsondiff"
)

// The chain tells the recorder a call's context carries
// (decision.WithRecorder) what each plugin that ran decided, from the same
// loop that serves the call; the functions below make those decisions.

// failedDecision is a plugin's failure on hook: a deny when it failed
// closed, a skip when on_error skipped it.
func failedDecision(p *Plugin, hook, action, reason string, err error) decision.Decision {
	return decision.Decision{Plugin: p.spec.Name, Hook: hook, Action: action, Reason: reason, Error: oneLine(err)}
}

// callDecision describes a tool_call decision; args are the arguments the
// plugin was given.
func callDecision(p *Plugin, args json.RawMessage, d *abi.CallDecision) decision.Decision {
	s := decision.Decision{Plugin: p.spec.Name, Hook: abi.HookToolCall, Action: d.Action}
	switch d.Action {
	case "":
		s.Action = decision.Allow
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
	paths, _, err := jsondiff.Paths(before, after, decision.MaxPaths)
	return paths, err
}

// resultDecision describes what a tool_result hook made of before (after
// is before itself when the plugin left it unchanged).
func resultDecision(p *Plugin, before, after *abi.CallToolResult) decision.Decision {
	s := decision.Decision{Plugin: p.spec.Name, Hook: abi.HookToolResult, Action: decision.Unchanged}
	if after == before {
		return s
	}
	paths, err := resultParts(before, after)
	switch {
	case err != nil:
		s.Action, s.Error = decision.Changed, "comparing the results: "+err.Error()
	case len(paths) > 0:
		s.Action, s.Paths = decision.Changed, paths
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
		if len(parts) == decision.MaxPaths {
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

// listDecisions turns what the tools_list hooks did into one decision per
// plugin that hid tools, told to record; nil when record is.
func listDecisions(record func(decision.Decision)) func(p *Plugin, before, after []abi.Tool) {
	if record == nil {
		return nil
	}
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
			record(decision.Decision{Plugin: p.spec.Name, Hook: abi.HookToolsList, Action: decision.Deny, Tools: hidden})
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
