package host

import (
	"context"
	"net/http"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// newOAuthHandler returns how the transport to a server behind OAuth gets
// its tokens. The go-sdk's handlers do the protocol: discovery from the
// server's 401 (RFC 9728, RFC 8414), the token request, a new token when
// the server refuses the old one. One handler lives as long as the
// upstream, so reconnects reuse its token.
func newOAuthHandler(o *UpstreamOAuth) sdkauth.OAuthHandler {
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{
			ClientID:         o.ClientID,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret},
			Issuer:           o.Issuer,
		},
	})
	if err != nil {
		return refusingOAuth{err}
	}
	return h
}

// refusingOAuth stands for a handler the go-sdk would not make (Validate
// refuses what it refuses): every request fails with why.
type refusingOAuth struct{ err error }

func (r refusingOAuth) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, r.err }

func (r refusingOAuth) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	return r.err
}
