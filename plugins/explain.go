package plugins

import (
	"context"
	"encoding/json"

	"github.com/mcphost-project/mcphost/abi"
)

// ExplainedTool is a catalog tool and what the policy chain did to it for
// one caller: the tool as the caller sees it (or, hidden, as the catalog
// has it), which plugin hid it, and which changed it, in chain order.
type ExplainedTool struct {
	abi.Tool
	Exposed   bool     `json:"exposed"`
	HiddenBy  string   `json:"hiddenBy,omitempty"`
	ChangedBy []string `json:"changedBy,omitempty"`
}

// ExplainTools runs the tools_list hooks as ToolsList does and reports,
// for every tool of in.Tools, who hid or changed it. It is for operators (the admin API's /v1/tools), not for serving: it
// does not use or fill the hosts' caches.
func (m *Manager) ExplainTools(ctx context.Context, in *abi.ToolsListInput) ([]ExplainedTool, error) {
	type key struct{ server, tool string }
	out := make([]ExplainedTool, len(in.Tools))
	index := make(map[key]int, len(in.Tools))
	for i, t := range in.Tools {
		out[i] = ExplainedTool{Tool: t, Exposed: true}
		index[key{t.Server, t.Tool}] = i
	}
	step := func(p *Plugin, before, after []abi.Tool) {
		kept := make(map[key]abi.Tool, len(after))
		for _, t := range after {
			kept[key{t.Server, t.Tool}] = t
		}
		for _, t := range before {
			i, ok := index[key{t.Server, t.Tool}]
			if !ok {
				continue
			}
			next, still := kept[key{t.Server, t.Tool}]
			switch {
			case !still:
				out[i].Exposed, out[i].HiddenBy = false, p.spec.Name
			case !sameTool(t, next):
				out[i].Tool = next
				out[i].ChangedBy = append(out[i].ChangedBy, p.spec.Name)
			}
		}
	}
	_, err := onCurrent(m, nil, func(c *Chain) ([]abi.Tool, error) { return c.toolsListSteps(ctx, in, step) })
	return out, err
}

func sameTool(a, b abi.Tool) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
