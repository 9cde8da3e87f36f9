package plugins

import "github.com/mcphost-project/mcphost/host/gateway"

// Chain and Manager are what the host asks about policy.
var (
	_ gateway.Policy = (*Chain)(nil)
	_ gateway.Policy = (*Manager)(nil)
)
