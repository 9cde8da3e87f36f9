package upstream

import (
	"fmt"
	"net/http"

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
		return newCodeFlow(server, "", o, env, log)
	}
	// client_credentials, and the gateway's own listing of a token
	// exchange server.
	if err := CheckOAuth(o); err != nil {
		return nil, err
	}
	cfg := &extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{
			ClientID:         o.ClientID,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret},
			Issuer:           o.Issuer,
		},
	}
	if o.ClientAssertionKey != "" {
		s, err := newClientSigner(o.ClientID, o.ClientAssertionKey, o.ClientAssertionAlg)
		if err != nil {
			return nil, err
		}
		cfg.Credentials.ClientSecretAuth.ClientSecret = assertionPlaceholder
		cfg.HTTPClient = &http.Client{Timeout: oauthHTTPTimeout, Transport: newAssertionTransport(http.DefaultTransport, s)}
	}
	return extauth.NewClientCredentialsHandler(cfg)
}

// CheckOAuth is what Validate asks of an oauth block.
func CheckOAuth(o *UpstreamOAuth) error {
	switch {
	case o.Grant == GrantClientCredentials || o.Grant == GrantTokenExchange:
		if o.Mode != "" {
			return fmt.Errorf("mode %q is for logins; the %s grant has none", o.Mode, o.Grant)
		}
		if o.ClientAssertionKey != "" {
			if o.Grant != GrantClientCredentials || o.ClientSecret != "" || o.ClientID == "" {
				return fmt.Errorf("client_assertion_key authenticates the %s grant's client_id in place of client_secret: give client_id and the key, no secret", GrantClientCredentials)
			}
			if _, _, err := ParseClientKey(o.ClientAssertionKey, o.ClientAssertionAlg); err != nil {
				return err
			}
		} else if o.ClientID == "" || o.ClientSecret == "" {
			return fmt.Errorf("the %s grant needs client_id and client_secret (or client_assertion_key)", o.Grant)
		}
		if o.Grant == GrantTokenExchange && o.Issuer == "" {
			return fmt.Errorf("the %s grant needs issuer: the authorization server that issues the callers' tokens and exchanges them", o.Grant)
		}
		if o.Audience != "" && o.Grant != GrantTokenExchange {
			return fmt.Errorf("audience is for the %s grant", GrantTokenExchange)
		}
		return nil
	case o.Grant != "":
		return fmt.Errorf("oauth grant %q is not supported (want %q, %q, or none for a login)", o.Grant, GrantClientCredentials, GrantTokenExchange)
	case o.Audience != "":
		return fmt.Errorf("audience is for the %s grant", GrantTokenExchange)
	case o.Mode != "" && o.Mode != OAuthShared && o.Mode != OAuthPerUser:
		return fmt.Errorf("oauth mode %q is not supported (want %q or %q)", o.Mode, OAuthShared, OAuthPerUser)
	}
	return checkCodeFlow(o)
}

// CallerTokens reports whether each caller's requests to the server carry
// their own token (per_user logins, token exchange).
func CallerTokens(o *UpstreamOAuth) bool {
	return o != nil && ((o.Grant == "" && o.Mode == OAuthPerUser) || o.Grant == GrantTokenExchange)
}

// oauthKind names an oauth block's kind for messages.
func oauthKind(o *UpstreamOAuth) string {
	if o.Grant != "" {
		return fmt.Sprintf("grant %q", o.Grant)
	}
	return fmt.Sprintf("mode %q", o.Mode)
}
