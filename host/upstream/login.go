package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/grants"
)

// LoginOptions configure Login.
type LoginOptions struct {
	Grants grants.Store // where the grant is kept (required)
	Logins *Logins      // the callback's end; serve it at the redirect URL
	// Redirect is the redirect_url when the server's oauth block names
	// none: the running mcphost's own callback.
	Redirect string
	// Announce shows the link (and opens a browser).
	Announce func(server, url string)
	Logger   hclog.Logger
}

// Login runs the authorization-code login of one server in the
// foreground, as `mcphost auth login` does: it shows the link, waits (until
// ctx ends) for the callback, which the caller serves with opts.Logins at
// the redirect URL, stores the grant, and checks it by listing the
// server's tools, whose count it returns. A grant stored before is not
// used: a login is always asked for.
func Login(ctx context.Context, cfg ServerConfig, opts LoginOptions) (int, error) {
	if cfg.OAuth == nil || cfg.OAuth.Grant != "" {
		return 0, fmt.Errorf("server %q does not log in (its oauth block needs no grant, and mode = %q)", cfg.Name, OAuthShared)
	}
	if opts.Grants == nil || opts.Logins == nil {
		return 0, errors.New("host: Login needs Grants and Logins")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return 0, err
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	env := &OAuthEnv{Grants: fresh{opts.Grants}, Logins: opts.Logins, Redirect: opts.Redirect, Announce: opts.Announce}
	u := New(cfg, log.Named(cfg.Name), probeEvents{log: log, env: env})
	defer u.Close()
	cs, err := u.connectWith(Interactive(ctx), u.client, u.oauth)
	if err != nil {
		return 0, err
	}
	defer cs.Close()
	tools, err := listTools(ctx, cs)
	if err != nil {
		return 0, fmt.Errorf("authorized, but listing tools failed: %w", err)
	}
	return len(tools), nil
}

// fresh is a grants store that has no grant to give: a login asks anew,
// and what it gets is kept as usual.
type fresh struct{ grants.Store }

func (fresh) Get(context.Context, string, string) (*grants.Grant, error) { return nil, nil }
