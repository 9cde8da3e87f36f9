package plugins

import "github.com/mcphost-project/mcphost/host"

// Chain and Manager are what the host asks about policy.
var (
	_ host.Policy = (*Chain)(nil)
	_ host.Policy = (*Manager)(nil)
)
