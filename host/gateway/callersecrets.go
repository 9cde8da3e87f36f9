package gateway

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/host/usersecrets"
)

// Callers' secrets (host/usersecrets): the values a server's caller
// templates read as ${caller.secrets.NAME}, handed to each caller's own
// upstream session when it starts.

// CallerSecrets gives a caller's session its secrets
// (upstream.Events.CallerSecrets).
func (h *Host) CallerSecrets(ctx context.Context, server string, id *auth.Identity, names []string) (map[string]upstream.CallerSecret, error) {
	if h.secrets == nil {
		return nil, fmt.Errorf("server %q reads the caller's secrets (caller.secrets), and this mcphost keeps none: give it a store block with a key", server)
	}
	return h.secrets.CallerSecrets(ctx, server, id, names)
}

// RestartCallerSessions ends subject's upstream sessions of the servers
// whose caller templates read one of the secrets of current (each one's
// version now, 0 for one deleted) and that were started with another
// version: their next request starts them with the current values. Other
// callers' sessions, and servers that read none of them, are left alone.
// It returns how many sessions it ended.
func (h *Host) RestartCallerSessions(subject string, current map[string]int64) int {
	n := 0
	for _, u := range h.upstreamList() {
		if u.Config.Caller == nil || !slices.ContainsFunc(u.Config.Caller.Secrets(), func(s string) bool { _, ok := current[s]; return ok }) {
			continue
		}
		if k := u.CloseCallerSessions(subject, current); k > 0 {
			h.log.Info("restarted a caller's upstream sessions: a secret of theirs changed", "server", u.Config.Name, "subject", subject, "sessions", k)
			n += k
		}
	}
	return n
}

// secretPage serves the secret page, where a caller gives a secret.
func (h *Host) secretPage(mux *http.ServeMux) {
	if h.secrets == nil {
		return
	}
	page := func(w http.ResponseWriter, r *http.Request) { h.secrets.Serve(w, r, h.authn.Load()) }
	mux.HandleFunc("GET "+usersecrets.SecretPath, page)
	mux.HandleFunc("POST "+usersecrets.SecretPath, page)
}
