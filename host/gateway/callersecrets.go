package gateway

import (
	"context"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/host/usersecrets"
)

// CallerSecrets gives a caller's session their ${caller.secrets.NAME}
// (upstream.Events; host/usersecrets, h.secrets nil without a store key).
func (h *Host) CallerSecrets(ctx context.Context, server string, id *auth.Identity, names []string) (map[string]upstream.CallerSecret, error) {
	return h.secrets.CallerSecrets(ctx, server, id, names)
}

// RestartCallerSessions ends subject's upstream sessions that were started
// with other versions of the secrets of current (usersecrets.Restart).
func (h *Host) RestartCallerSessions(subject string, current map[string]int64) int {
	return usersecrets.Restart(h.upstreamList(), subject, current, h.log)
}
