package engine

import (
	"context"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/plugins"
)

// Tools is the catalog as caller would see it, with every tool's origin
// (server and upstream name) and which plugin hid or changed it: what an
// operator asks when a tool does not show up for someone.
func (e *Engine) Tools(ctx context.Context, caller abi.Caller) ([]plugins.ExplainedTool, error) {
	return e.mgr.ExplainTools(ctx, &abi.ToolsListInput{Caller: caller, Tools: e.host.Catalog()})
}

// ReloadPlugins reloads the running configuration's plugins: those whose
// file, hash or config changed are loaded again, the others kept, and
// listings are recomputed (a pin file approved meanwhile takes effect).
func (e *Engine) ReloadPlugins(ctx context.Context) error {
	return e.Reload(ctx, e.File())
}
