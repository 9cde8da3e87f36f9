package gateway

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
)

// CloseSessions closes every downstream session whose identity, or the
// identity of its latest request, accepted reports as no longer accepted
// (a revoked key, a disabled user): its streams end and its id is
// forgotten, so the client must start over with a credential that works.
// It returns how many it closed.
func (h *Host) CloseSessions(accepted func(*auth.Identity) bool) int {
	h.sessions.mu.Lock()
	var gone []*mcp.ServerSession
	for ss, d := range h.sessions.m {
		if latest := d.latest.Load(); (d.identity != nil && !accepted(d.identity)) || (latest != nil && !accepted(latest)) {
			gone = append(gone, ss)
		}
	}
	h.sessions.mu.Unlock()
	for _, ss := range gone {
		h.log.Info("closing a downstream session: its caller's credential is no longer accepted", "session", h.sessions.id(ss))
		_ = ss.Close()
	}
	return len(gone)
}
