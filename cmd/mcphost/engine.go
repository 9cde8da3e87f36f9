package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// startEngine starts what every command that talks to upstreams needs
// (host/engine); watch reloads plugins whose files change.
func startEngine(ctx context.Context, file *config.File, log hclog.Logger, watch bool) (*engine.Engine, error) {
	return engine.Start(ctx, file, &engine.Options{Logger: log, WatchPlugins: watch, StartWait: serveWait})
}

// serveWait is how long mcphost run waits for its servers before it
// serves: one that hangs must not hold the others back for its whole
// connect_timeout.
const serveWait = 500 * time.Millisecond

// startOneShot is startEngine for a command that runs once (tools, call):
// a server that needs an OAuth login prints its link (and opens a
// browser), the command serves the callback itself, and waits, within the
// server's connect_timeout, for the login instead of failing.
func startOneShot(ctx context.Context, file *config.File, log hclog.Logger, stderr io.Writer) (*engine.Engine, error) {
	cb := &callbacks{logins: &upstream.Logins{}}
	context.AfterFunc(ctx, cb.close)
	show := announcer(stderr, true)
	return engine.Start(ctx, file, &engine.Options{Logger: log, WaitLogins: true, Logins: cb.logins,
		Announce: func(server, link string) {
			if err := cb.serve(redirectOf(link)); err != nil {
				fmt.Fprintln(stderr, "mcphost:", err)
			}
			show(server, link)
		}})
}

// logStatuses reports each upstream's state once it settled after start.
func logStatuses(e *engine.Engine, log hclog.Logger) {
	for _, st := range e.Host().Statuses() {
		switch st.State {
		case upstream.StateConnected:
			log.Info("upstream ready", "server", st.Name, "transport", st.Transport, "tools", st.Tools)
		case upstream.StateConnecting:
			// Still starting: the engine has said so, and "upstream
			// connected" follows when it is ready.
		default:
			log.Error("upstream not ready; retrying in the background", "server", st.Name, "state", st.State, "error", st.Error)
		}
	}
}
