package main

import (
	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/listener"
)

// filesReserved are the descriptors kept for all but the listeners'
// connections: upstream processes' pipes, upstream connections, plugins'
// files, the store, logs.
const filesReserved = 128

// fitConnectionsToFiles keeps the two listeners' connection caps within the
// process's descriptor limit, so that neither can take the descriptors the
// other, or an upstream, needs: past the limit accept fails with EMFILE for
// every listener at once. When the caps do not fit, both are lowered in
// proportion, with a warning that says how to raise the limit.
func fitConnectionsToFiles(file *config.File, log hclog.Logger) {
	limit := openFilesLimit()
	if limit <= 0 {
		return // unknown here
	}
	mcp := file.Host.Listen.MaxConnections
	if mcp == 0 {
		mcp = listener.DefaultMaxConnections
	}
	adminConns := 0
	if file.Admin != nil {
		adminConns = file.Admin.MaxConnections
	}
	room := int(limit) - filesReserved
	if mcp+adminConns <= room {
		return
	}
	room = max(room, 2)
	newMCP := max(room*mcp/(mcp+adminConns), 1)
	newAdmin := max(room-newMCP, 1)
	log.Warn("lowering the connection caps to fit the open files limit (raise it with ulimit -n, or LimitNOFILE= in a systemd unit)",
		"open_files_limit", limit, "listen.max_connections", newMCP, "was", mcp, "admin.max_connections", newAdmin, "admin_was", adminConns)
	file.Host.Listen.MaxConnections = newMCP
	if file.Admin != nil {
		file.Admin.MaxConnections = newAdmin
	}
}
