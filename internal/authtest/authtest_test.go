package authtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/internal/authtest"
)

const redirect = "http://127.0.0.1:9/callback"

// noFollow is a browser that stops at the first redirect, to read it.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// register registers a public client dynamically and returns its id.
func register(t *testing.T, as *authtest.Server) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "client_name": "test"})
	resp, err := http.Post(as.URL+"/register", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg map[string]any
	json.NewDecoder(resp.Body).Decode(&reg)
	if resp.StatusCode != http.StatusCreated || reg["client_id"] == "" || reg["client_secret"] != nil {
		t.Fatalf("registration: %d %v", resp.StatusCode, reg)
	}
	return reg["client_id"].(string)
}

// authorize sends the user to the authorization endpoint and returns where
// it redirects, parsed.
func authorize(t *testing.T, link string) url.Values {
	t.Helper()
	resp, err := noFollow.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize answered %d", resp.StatusCode)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(u.String(), redirect+"?") {
		t.Fatalf("redirect to %q", resp.Header.Get("Location"))
	}
	return u.Query()
}

func config(as *authtest.Server, client string, scopes ...string) *oauth2.Config {
	return &oauth2.Config{ClientID: client, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: as.URL + "/authorize", TokenURL: as.URL + "/token", AuthStyle: oauth2.AuthStyleInParams}}
}

func invalidGrant(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_grant"
}

// TestCodeFlow: the authorization code grant with PKCE, resource and iss;
// one-time codes, rotating refresh tokens, revocation and the counters.
func TestCodeFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	as := authtest.New(t)
	const resource = "http://127.0.0.1:9/mcp"
	as.SetAccessTokenLifetime(90 * time.Second)
	client := register(t, as)
	cfg := config(as, client, "mcp:tools", "offline_access")
	verifier := oauth2.GenerateVerifier()
	res := oauth2.SetAuthURLParam("resource", resource)
	q := authorize(t, cfg.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier), res))
	if q.Get("state") != "st-1" || q.Get("iss") != as.URL || q.Get("code") == "" {
		t.Fatalf("authorization response %v", q)
	}
	if _, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()), res); !invalidGrant(err) {
		t.Fatalf("exchange with the wrong verifier: %v", err)
	}
	// A code is used up by any exchange, right or wrong.
	if _, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), res); !invalidGrant(err) {
		t.Fatalf("second exchange of a code: %v", err)
	}
	q = authorize(t, cfg.AuthCodeURL("st-2", oauth2.S256ChallengeOption(verifier), res))
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), res)
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken == "" || tok.Extra("scope") != "mcp:tools offline_access" || time.Until(tok.Expiry) > 91*time.Second {
		t.Fatalf("token %+v scope %v", tok, tok.Extra("scope"))
	}
	// The access token is for the resource, with the granted scope.
	a, err := auth.New(auth.Config{OAuth: &auth.OAuth{Issuer: as.URL, Audience: resource, Scopes: []string{"mcp:tools", "offline_access"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, f := a.Authenticate(ctx, "Bearer "+tok.AccessToken); f != nil || id.Subject != authtest.DefaultUser {
		t.Fatalf("the access token does not verify for %s: %v", resource, f)
	}

	// Refresh tokens rotate: the old one fails once used.
	next, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil || next.RefreshToken == tok.RefreshToken || next.AccessToken == tok.AccessToken {
		t.Fatalf("refresh: %+v, %v", next, err)
	}
	if _, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); !invalidGrant(err) {
		t.Fatalf("reused refresh token: %v", err)
	}
	if as.Revoked(next.AccessToken) {
		t.Fatal("revoked before RevokeAccessTokens")
	}
	as.RevokeAccessTokens()
	if !as.Revoked(next.AccessToken) || !as.Revoked(tok.AccessToken) {
		t.Fatal("not revoked after RevokeAccessTokens")
	}
	as.RevokeRefreshTokens()
	if _, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: next.RefreshToken}).Token(); !invalidGrant(err) {
		t.Fatalf("revoked refresh token: %v", err)
	}

	if as.Registrations() != 1 || as.Authorizations() != 2 || as.TokenRequests("authorization_code") != 3 || as.TokenRequests("refresh_token") != 3 {
		t.Errorf("counters: %d registrations, %d authorizations, %d code and %d refresh requests",
			as.Registrations(), as.Authorizations(), as.TokenRequests("authorization_code"), as.TokenRequests("refresh_token"))
	}
	if len(as.IssuedSecrets()) != 2+2*2 { // 2 codes, 2 access and 2 refresh tokens
		t.Errorf("%d secrets issued", len(as.IssuedSecrets()))
	}
}

// TestAuthorizeRefusals: what the authorization endpoint refuses, and how
// (400 for a wrong client or redirect URI, an error redirect otherwise).
func TestAuthorizeRefusals(t *testing.T) {
	t.Parallel()
	as := authtest.New(t)
	client := register(t, as)
	as.AddClient("pre", authtest.Client{RedirectURIs: []string{redirect}, GrantTypes: []string{"refresh_token"}})
	good := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"},
		"resource": {"http://127.0.0.1:9/mcp"}, "scope": {"mcp:tools"}}
	for _, tc := range []struct {
		name   string
		change func(url.Values)
		status int
		error  string // in the redirect, for a 302
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "nobody") }, 400, ""},
		{"unregistered redirect", func(q url.Values) { q.Set("redirect_uri", redirect+"/x") }, 400, ""},
		{"no redirect", func(q url.Values) { q.Del("redirect_uri") }, 400, ""},
		{"token response type", func(q url.Values) { q.Set("response_type", "token") }, 302, "unsupported_response_type"},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge") }, 302, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, 302, "invalid_request"},
		{"no state", func(q url.Values) { q.Del("state") }, 302, "invalid_request"},
		{"no resource", func(q url.Values) { q.Del("resource") }, 302, "invalid_target"},
		{"relative resource", func(q url.Values) { q.Set("resource", "/mcp") }, 302, "invalid_target"},
		{"unknown scope", func(q url.Values) { q.Set("scope", "mcp:tools root") }, 302, "invalid_scope"},
		{"client without the grant", func(q url.Values) { q.Set("client_id", "pre") }, 302, "unauthorized_client"},
	} {
		q := url.Values{}
		for k, v := range good {
			q[k] = v
		}
		tc.change(q)
		resp, err := noFollow.Get(as.URL + "/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != tc.status || (tc.error != "" && (loc.Query().Get("error") != tc.error || loc.Query().Get("iss") != as.URL)) {
			t.Errorf("%s: %d to %q, want %d with error %q", tc.name, resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.error)
		}
	}
	if n := as.Authorizations(); n != 0 {
		t.Errorf("%d refused requests counted as authorizations", n)
	}

	as.SetConsent(authtest.Deny)
	if q := authorize(t, as.URL+"/authorize?"+good.Encode()); q.Get("error") != "access_denied" || q.Get("state") != "s" || q.Get("code") != "" {
		t.Errorf("denied: %v", q)
	}
	as.SetConsent(authtest.Hold)
	resp, err := noFollow.Get(as.URL + "/authorize?" + good.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	held := as.Held()
	if resp.StatusCode != http.StatusOK || len(held) != 1 || !strings.Contains(held[0], "code=") || len(as.Held()) != 0 {
		t.Errorf("held: %d %q", resp.StatusCode, held)
	}
}

// TestRegistrationRefusals: client metadata the registration endpoint
// refuses.
func TestRegistrationRefusals(t *testing.T) {
	t.Parallel()
	as := authtest.New(t)
	for _, body := range []string{
		`{}`,
		`{"redirect_uris":["javascript:alert(1)"]}`,
		`{"redirect_uris":["http://127.0.0.1/cb#frag"]}`,
		`{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["client_credentials"]}`,
		`{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"private_key_jwt"}`,
		`not json`,
	} {
		resp, err := http.Post(as.URL+"/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", body, resp.StatusCode)
		}
	}
	if n := as.Registrations(); n != 0 {
		t.Errorf("%d registrations", n)
	}
}
