package upstream

import (
	"errors"
	"fmt"

	"github.com/mcphost-project/mcphost/host/auth"
)

// oauth mode "per_user": each caller identity has its own grant, its own
// login and its own upstream session (sessions = "per_client"), so one
// caller's token never carries another's request. The gateway's own grant
// (the shared session's, from `mcphost auth login`) only lists what the
// server offers; no caller's request goes over it.
//
// A caller without a grant who calls the server gets its login link: as a
// URL-mode elicitation when their client takes those (the call then waits
// for the login and goes on), otherwise in the call's error result.

// grantSubject is the grants.Grant.Subject of a caller: the method with
// the subject, so that an API key and a token that name the same subject
// stay apart. It leaves out groups and attributes: a caller who changes
// groups keeps their grant.
func grantSubject(id *auth.Identity) string {
	if id == nil {
		return ""
	}
	return id.Method + ":" + id.Subject
}

// PerUser reports whether each caller authorizes for themself.
func (u *Server) PerUser() bool {
	o := u.Config.OAuth
	return o != nil && o.Grant == "" && o.Mode == OAuthPerUser
}

// errNoCaller refuses a request to a per_user server that no identity
// made: there is no one whose grant it could use.
func (u *Server) errNoCaller() error {
	return fmt.Errorf("server %q authorizes each caller with their own account (oauth mode %q), and this request comes from no authenticated caller: connect with a credential of listen.auth", u.Config.Name, OAuthPerUser)
}

// UserFlow returns the login flow of subject's grant, made on first use
// (it reads the stored grant, so not under u.mu).
func (u *Server) UserFlow(subject string) (*CodeFlow, error) {
	u.mu.Lock()
	f := u.userFlows[subject]
	u.mu.Unlock()
	if f != nil {
		return f, nil
	}
	f, err := newCodeFlow(u.Config.Name, subject, u.Config.OAuth, u.events.OAuthEnv(), u.log.With("subject", subject))
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		f.close()
		return nil, ErrClosed
	}
	if old := u.userFlows[subject]; old != nil {
		f.close()
		return old, nil
	}
	u.userFlows[subject] = f
	return f, nil
}

// loadUserGrants makes the flows of the grants stored for the server, so
// that its status counts the callers already authorized.
func (u *Server) loadUserGrants() {
	env := u.events.OAuthEnv()
	if env == nil || env.Grants == nil {
		return
	}
	all, err := env.Grants.List(u.ctx)
	if err != nil {
		// What was read still counts: a store lists the grants that open.
		u.log.Warn("listing the stored OAuth grants failed", "error", err)
	}
	for _, g := range all {
		if g.Server == u.Config.Name && g.Subject != "" {
			if _, err := u.UserFlow(g.Subject); err != nil && !errors.Is(err, ErrClosed) {
				u.log.Warn("reading a caller's OAuth grant failed", "subject", g.Subject, "error", err)
			}
		}
	}
}

// UserLogins counts the callers of a per_user server by where their
// login stands.
type UserLogins struct {
	Authorized  int `json:"authorized"`  // holding a grant that may still work
	Authorizing int `json:"authorizing"` // with a login link waiting to be opened
}

// userLogins counts the flows of a per_user server; nil for other servers.
func (u *Server) userLogins() *UserLogins {
	if !u.PerUser() {
		return nil
	}
	u.mu.Lock()
	flows := make([]*CodeFlow, 0, len(u.userFlows))
	for _, f := range u.userFlows {
		flows = append(flows, f)
	}
	u.mu.Unlock()
	out := &UserLogins{}
	for _, f := range flows {
		switch {
		case f.pendingURL() != "":
			out.Authorizing++
		case f.HasGrant():
			out.Authorized++
		}
	}
	return out
}

// closeUserFlows ends the logins of a closed upstream.
func (u *Server) closeUserFlows() {
	u.mu.Lock()
	flows := u.userFlows
	u.userFlows = nil
	u.mu.Unlock()
	for _, f := range flows {
		f.close()
	}
}
