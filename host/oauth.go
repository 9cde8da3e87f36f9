package host

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// newOAuthHandler returns how the transport to a server behind OAuth gets
// its tokens, or why it cannot (Validate asks it). The go-sdk's handlers
// do the protocol: discovery from the server's 401 (RFC 9728, RFC 8414),
// the token request, a new token when the server refuses the old one. One
// handler lives as long as the upstream, so reconnects reuse its token.
func newOAuthHandler(o *UpstreamOAuth, server string, env *OAuthEnv, log hclog.Logger) (sdkauth.OAuthHandler, error) {
	if o.Grant == "" {
		return newCodeFlow(server, o, env, log)
	}
	if err := checkOAuth(o); err != nil {
		return nil, err
	}
	return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{
			ClientID:         o.ClientID,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret},
			Issuer:           o.Issuer,
		},
	})
}

// checkOAuth is what Validate asks of an oauth block.
func checkOAuth(o *UpstreamOAuth) error {
	switch {
	case o.Grant == GrantClientCredentials:
		if o.Mode != "" {
			return fmt.Errorf("mode %q is for logins; the client_credentials grant has none", o.Mode)
		}
		if o.ClientID == "" || o.ClientSecret == "" {
			return fmt.Errorf("the client_credentials grant needs client_id and client_secret")
		}
		return nil
	case o.Grant != "":
		return fmt.Errorf("oauth grant %q is not supported (want %q, or none for a login)", o.Grant, GrantClientCredentials)
	case o.Mode != "" && o.Mode != OAuthShared:
		return fmt.Errorf("oauth mode %q is not built (want %q)", o.Mode, OAuthShared)
	}
	return checkCodeFlow(o)
}
