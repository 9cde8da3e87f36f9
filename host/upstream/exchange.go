package upstream

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcphost-project/mcphost/host/auth"
)

// oauth grant "token_exchange": each caller who signed in to mcphost with
// an OAuth access token (listen.auth's oauth) reaches the server with a
// token of their own, which mcphost gets by exchanging theirs at the same
// issuer (RFC 8693, through oauthex.ExchangeToken). The caller's token
// goes to that issuer and nowhere else; the server sees a token for its
// own audience, on behalf of the caller. Requests go over the caller's own
// upstream session (sessions = "per_client"); the gateway's own
// client_credentials token (u.oauth) only lists what the server offers.

// exchanges reports whether the server takes the callers' exchanged tokens.
func (u *Server) exchanges() bool {
	return u.Config.OAuth != nil && u.Config.OAuth.Grant == GrantTokenExchange
}

// exchangeFlow is one caller's exchanged token: an sdkauth.OAuthHandler.
type exchangeFlow struct {
	u *Server
	// caller is the caller's identity as last seen, with the freshest
	// access token their client sent (offer).
	caller atomic.Pointer[auth.Identity]

	mu  sync.Mutex // held through an exchange: one at a time per caller
	tok *oauth2.Token
}

// exchangeFor returns the flow of the caller whose identity key is key,
// made on first use, after offering it id's token.
func (u *Server) exchangeFor(key string, id *auth.Identity) *exchangeFlow {
	u.mu.Lock()
	x := u.exchangers[key]
	if x == nil {
		x = &exchangeFlow{u: u}
		u.exchangers[key] = x
	}
	u.mu.Unlock()
	x.offer(id)
	return x
}

// offer keeps id if its token outlives the one kept: a client that renewed
// its token sends the new one from then on, and the next exchange uses it.
func (x *exchangeFlow) offer(id *auth.Identity) {
	tok, exp := id.Bearer()
	if tok == "" {
		return
	}
	for {
		cur := x.caller.Load()
		if _, curExp := cur.Bearer(); cur != nil && !exp.After(curExp) {
			return
		}
		if x.caller.CompareAndSwap(cur, id) {
			return
		}
	}
}

// TokenSource is the exchanged token, exchanged again when it expired.
func (x *exchangeFlow) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return x, nil
}

// Token implements oauth2.TokenSource.
func (x *exchangeFlow) Token() (*oauth2.Token, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tok.Valid() {
		return x.tok, nil
	}
	return x.exchangeLocked()
}

// Authorize answers the server's 401 by exchanging again, unless another
// request already did since req was sent. A 403 is the server's to say: the
// exchanged token has the scopes the issuer gave it.
func (x *exchangeFlow) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.tok != nil && req.Header.Get("Authorization") != "Bearer "+x.tok.AccessToken {
		return nil // replaced meanwhile: the retry carries the new one
	}
	x.tok = nil
	_, err := x.exchangeLocked()
	return err
}

// exchangeLocked trades the caller's token for one for the server.
func (x *exchangeFlow) exchangeLocked() (*oauth2.Token, error) {
	o, name := x.u.Config.OAuth, x.u.Config.Name
	id := x.caller.Load()
	subject, exp := id.Bearer()
	switch {
	case subject == "":
		return nil, &ExchangeFailed{Server: name, Reason: "you did not sign in to mcphost with an OAuth access token, which this server needs to exchange (oauth grant token_exchange)"}
	case time.Now().After(exp):
		return nil, &ExchangeFailed{Server: name, Reason: "your access token expired; sign in again"}
	}
	ctx, cancel := context.WithTimeout(x.u.ctx, oauthHTTPTimeout)
	defer cancel()
	endpoint, err := x.u.exchangeEndpoint(ctx)
	if err != nil {
		return nil, &ExchangeFailed{Server: name, Reason: err.Error()}
	}
	audience := o.Audience
	if audience == "" {
		audience = x.u.Config.URL
	}
	tok, err := oauthex.ExchangeToken(ctx, endpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: tokenTypeAccessToken,
		Audience:           audience,
		Resource:           x.u.Config.URL,
		Scope:              o.Scopes,
		SubjectToken:       subject,
		SubjectTokenType:   tokenTypeAccessToken,
	}, &oauthex.ClientCredentials{ClientID: o.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}}, x.u.oauthClient)
	if err != nil {
		// The issuer's words, without the two secrets it was sent, should
		// it echo them.
		why := (&tokenFailure{err: err, what: "token exchange"}).Error()
		why = strings.ReplaceAll(strings.ReplaceAll(why, subject, "[your token]"), o.ClientSecret, "[client secret]")
		return nil, &ExchangeFailed{Server: name, Reason: why}
	}
	if t, _ := tok.Extra("issued_token_type").(string); t != tokenTypeAccessToken {
		return nil, &ExchangeFailed{Server: name, Reason: fmt.Sprintf("the issuer answered with a token of type %q, not an access token", t)}
	}
	if tok.Expiry.IsZero() || tok.Expiry.After(exp) {
		// Never past the caller's own token: the exchange does not make
		// their session last longer.
		tok.Expiry = exp
	}
	x.tok = tok
	return tok, nil
}

// tokenTypeAccessToken is RFC 8693's identifier of an OAuth access token.
const tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// ExchangeFailed is why a caller's token could not be exchanged for the
// server's; it never carries a token.
type ExchangeFailed struct {
	Server string
	Reason string
}

func (e *ExchangeFailed) Error() string {
	return fmt.Sprintf("server %q: mcphost could not get a token for you: %s", e.Server, e.Reason)
}

// exchangeEndpoint is the token endpoint of the oauth block's issuer, from
// its metadata (RFC 8414, with the OpenID Connect fallback); found once.
func (u *Server) exchangeEndpoint(ctx context.Context) (string, error) {
	u.exchangeMu.Lock()
	defer u.exchangeMu.Unlock()
	if u.tokenEndpoint != "" {
		return u.tokenEndpoint, nil
	}
	issuer := u.Config.OAuth.Issuer
	meta, err := sdkauth.GetAuthServerMetadata(ctx, issuer, u.oauthClient)
	switch {
	case err != nil:
		return "", fmt.Errorf("reading the metadata of issuer %s: %w", issuer, err)
	case meta == nil || meta.TokenEndpoint == "":
		return "", fmt.Errorf("issuer %s publishes no authorization server metadata with a token endpoint", issuer)
	}
	u.tokenEndpoint = meta.TokenEndpoint
	return u.tokenEndpoint, nil
}

// errNoBearer refuses a request to a token exchange server from a caller
// with no OAuth token to exchange.
func (u *Server) errNoBearer() error {
	return &ExchangeFailed{Server: u.Config.Name, Reason: "this server takes each caller's own OAuth token, exchanged (oauth grant token_exchange), and this request comes from a caller who did not sign in with one (an API key, or none)"}
}

var _ sdkauth.OAuthHandler = (*exchangeFlow)(nil)
