package listener

import (
	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/auth"
)

// DefaultAdminGroup is the group whose keys may read /status when
// listen.auth names no admin_groups (OAuth tokens then never may); the
// auth_token shorthand's key is in it.
const DefaultAdminGroup = "admins"

// NewAuthenticator builds the endpoint's authenticator from l.Auth and the
// auth_token shorthand; nil when neither is set.
func NewAuthenticator(l Config, log hclog.Logger) (*auth.Authenticator, error) {
	var cfg auth.Config
	if l.Auth != nil {
		cfg = *l.Auth
		cfg.Keys = append([]auth.Key(nil), cfg.Keys...)
	}
	if l.AuthToken != "" {
		k := auth.KeyFromValue("auth_token", l.AuthToken)
		k.Subject, k.Groups = "token", []string{DefaultAdminGroup}
		cfg.Keys = append(cfg.Keys, k)
	}
	if !cfg.Enabled() {
		return nil, nil
	}
	if len(cfg.AdminGroups) == 0 {
		// The default group counts for keys only: an identity provider's
		// groups claim could name "admins" for anyone.
		cfg.AdminGroups, cfg.AdminKeysOnly = []string{DefaultAdminGroup}, true
	}
	return auth.New(cfg, log)
}
