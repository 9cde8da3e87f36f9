package host

import (
	"fmt"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// newOAuthHandler returns how the transport to a server behind OAuth gets
// its tokens, or why it cannot (Validate asks it). The go-sdk's handlers
// do the protocol: discovery from the server's 401 (RFC 9728, RFC 8414),
// the token request, a new token when the server refuses the old one. One
// handler lives as long as the upstream, so reconnects reuse its token.
func newOAuthHandler(o *UpstreamOAuth) (sdkauth.OAuthHandler, error) {
	if o.Grant != GrantClientCredentials {
		return nil, fmt.Errorf("oauth grant %q is not supported (want %q)", o.Grant, GrantClientCredentials)
	}
	return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{
			ClientID:         o.ClientID,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret},
			Issuer:           o.Issuer,
		},
	})
}
