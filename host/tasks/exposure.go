package tasks

import (
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/search"
)

// Unwrap reads a task-mode call as the endpoint's tool exposure (a
// catalog.ToolsConfig's Exposure) runs it. Under search exposure, call_tool
// of a catalog tool becomes that tool's own call (p's name and arguments
// are rewritten), so it runs as any call of the tool does: as its
// server's task, or as one mcphost runs. The tools of the exposure itself
// (search_tools, describe_tools, code mode's run_code, and call_tool of
// one of them) are mcphost's, and whole reports them: they run whole as a
// task mcphost runs, as their plain call runs (a script of run_code may
// take long). The specification asks a server to refuse a task-mode call
// of a tool that does not declare task support; mcphost runs these as
// tasks instead, as a client that asks for one expects.
func (p *CallParams) Unwrap(exposure string) (whole bool) {
	switch exposure {
	case catalog.ExposureSearch:
		p.Name, p.Arguments, whole = search.TaskCall(p.Name, p.Arguments)
		return whole
	case catalog.ExposureCode:
		return p.Name == codemode.ToolName
	}
	return false
}
