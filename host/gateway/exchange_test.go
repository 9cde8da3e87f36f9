package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
)

// oauth grant token_exchange against a real authorization server and a
// real protected server on loopback: callers sign in to mcphost with
// tokens of the authorization server (listen.auth's oauth), and mcphost
// exchanges each caller's for one for the protected server.

const mcphostAudience = "https://mcphost.example/mcp"

// startExchange starts a host whose server "x" in front of rs takes the
// callers' exchanged tokens, as client "mcphost" of rs's authorization
// server, registered with grants (all when empty); bob signs in with an
// API key instead.
func startExchange(t *testing.T, rs *resource, grants ...string) (*Host, string) {
	t.Helper()
	rs.as.AddClient("mcphost", authtest.Client{Secret: "s3cret", Subject: "svc:mcphost", Audience: rs.URL, GrantTypes: grants})
	srv := upstream.ServerConfig{Name: "x", Transport: upstream.TransportStreamableHTTP, URL: rs.URL,
		OAuth: &upstream.UpstreamOAuth{Grant: upstream.GrantTokenExchange, Issuer: rs.as.URL, ClientID: "mcphost", ClientSecret: "s3cret", Scopes: []string{"mcp:tools"}}}
	listen := listener.Config{Auth: &auth.Config{
		OAuth: &auth.OAuth{Issuer: rs.as.URL, Audience: mcphostAudience},
		Keys:  []auth.Key{keyFor("bob", "bob-key-0123456789", nil, nil)},
	}}
	h, base := startCodeHostConfig(t, Config{Listen: listen, Servers: []upstream.ServerConfig{srv}}, &Options{})
	return h, base + "/mcp"
}

// TestOAuthTokenExchange: each caller's call carries a token the issuer
// exchanged from theirs, got once and again when the server refuses it;
// the server never sees the caller's own token, nor the gateway's.
func TestOAuthTokenExchange(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	h, url := startExchange(t, rs)
	waitConnected(t, h, "x") // the gateway's own client_credentials token lists the tools

	alice := dialAs(t, url, as.Token(t, "alice", mcphostAudience, nil), nil)
	carol := dialAs(t, url, as.Token(t, "carol", mcphostAudience, nil), nil)
	whoami := func(cs *mcp.ClientSession) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "x__whoami"})
		if err != nil {
			t.Fatal(err)
		}
		return text(t, res), res.IsError
	}
	expect := func(cs *mcp.ClientSession, who string) string {
		t.Helper()
		got, isErr := whoami(cs)
		// The protected server checks the token's audience itself: the
		// caller's token (for mcphost) would be refused there.
		if isErr || !strings.HasPrefix(got, who+" (oauth) jti=xt-") {
			t.Fatalf("the call for %s ran as %q (isError %v)", who, got, isErr)
		}
		return got
	}
	var wg sync.WaitGroup
	for range 3 {
		for cs, who := range map[*mcp.ClientSession]string{alice: "alice", carol: "carol"} {
			wg.Go(func() {
				got, isErr := whoami(cs)
				if isErr || !strings.HasPrefix(got, who+" (oauth) jti=xt-") {
					t.Errorf("a concurrent call for %s ran as %q", who, got)
				}
			})
		}
	}
	wg.Wait()
	if n := as.TokenRequests(authtest.GrantTokenExchange); n != 2 {
		t.Errorf("%d token exchanges for 2 callers, want 2 (one each, then kept)", n)
	}

	// The server refuses the exchanged tokens: one exchange each again.
	first := expect(alice, "alice")
	as.RevokeAccessTokens()
	if got := expect(alice, "alice"); got == first {
		t.Errorf("still the revoked token: %s", got)
	}
	expect(carol, "carol")
	if n := as.TokenRequests(authtest.GrantTokenExchange); n != 4 {
		t.Errorf("%d token exchanges after the revocation, want 4", n)
	}

	// A caller with an API key has no token to exchange; nor has the Go
	// API's anonymous caller. Neither gets the gateway's token.
	bob := dialAs(t, url, "bob-key-0123456789", nil)
	if got, isErr := whoami(bob); !isErr || !strings.Contains(got, "did not sign in with one") {
		t.Errorf("bob's call = %q (isError %v)", got, isErr)
	}
	if got, isErr := call(t, h, "x__whoami"); !isErr || !strings.Contains(got, "could not get a token for you") {
		t.Errorf("an anonymous call = %q (isError %v)", got, isErr)
	}
}

// TestOAuthTokenExchangeRefused: an exchange the issuer refuses (the
// client may not exchange tokens) fails the call with the issuer's
// answer, and no token in the text.
func TestOAuthTokenExchangeRefused(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	h, url := startExchange(t, rs, "client_credentials")
	waitConnected(t, h, "x")
	token := as.Token(t, "alice", mcphostAudience, nil)
	alice := dialAs(t, url, token, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "x__whoami"})
	if err != nil {
		t.Fatal(err)
	}
	got := text(t, res)
	t.Logf("a refused exchange: %s", got)
	if !res.IsError || !strings.Contains(got, "unauthorized_client") || strings.Contains(got, token) || strings.Contains(got, "eyJ") {
		t.Errorf("a refused exchange = %q", got)
	}
}

// TestOAuthTokenExchangeValidate: the grant needs callers with tokens of
// the issuer it exchanges at.
func TestOAuthTokenExchangeValidate(t *testing.T) {
	o := &upstream.UpstreamOAuth{Grant: upstream.GrantTokenExchange, Issuer: "https://idp.example", ClientID: "a", ClientSecret: "b"}
	srv := []upstream.ServerConfig{{Name: "s", Transport: upstream.TransportStreamableHTTP, URL: "https://x.example/mcp", OAuth: o}}
	for _, tc := range []struct {
		listen listener.Config
		want   string
	}{
		{listener.Config{}, "add listen.auth.oauth"},
		{listener.Config{Auth: &auth.Config{OAuth: &auth.OAuth{Issuer: "https://other.example", Audience: "a"}}}, "must be the same"},
		{listener.Config{Auth: &auth.Config{OAuth: &auth.OAuth{Issuer: "https://idp.example/", Audience: "a"}}}, ""},
	} {
		err := Config{Listen: tc.listen, Servers: srv}.WithDefaults().Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.listen.Auth, err, tc.want)
		}
	}
	noIssuer := *o
	noIssuer.Issuer = ""
	if err := upstream.CheckOAuth(&noIssuer); err == nil || !strings.Contains(err.Error(), "needs issuer") {
		t.Errorf("no issuer: %v", err)
	}
}
