package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/mcphost-project/mcphost/internal/authtest"
)

const testAudience = "https://mcp.example.com/mcp"

func newTestAuth(t testing.TB, as *authtest.Server) *Authenticator {
	a, err := New(Config{
		Keys: []Key{{Name: "ci", SHA256: KeyFromValue("ci", "ci-bot-key-0123456789").SHA256, Subject: "ci-bot", Groups: []string{"automation"}}},
		OAuth: &OAuth{Issuer: as.URL, Audience: testAudience, Scopes: []string{"mcp:tools"},
			Attributes: map[string]string{"team": "team"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestOAuthTokens(t *testing.T) {
	t.Parallel()
	as := authtest.New(t)
	a := newTestAuth(t, as)
	ctx := context.Background()
	bearer := func(tok string) string { return "Bearer " + tok }

	id, f := a.Authenticate(ctx, bearer(as.Token(t, "alice", testAudience, nil)))
	if f != nil {
		t.Fatalf("good token refused: %v", f)
	}
	if id.Subject != "alice" || id.Method != "oauth" || len(id.Groups) != 1 || id.Groups[0] != "eng" || id.Attributes["team"] != "platform" {
		t.Fatalf("identity %+v", id)
	}
	if id, f := a.Authenticate(ctx, bearer("ci-bot-key-0123456789")); f != nil || id.Subject != "ci-bot" || id.Method != "key" {
		t.Fatalf("API key: %+v %v", id, f)
	}

	hsKey := jose.JSONWebKey{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "k1", Algorithm: "HS256"}
	rsaPub := as.PublicKey()
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tc := range []struct {
		name   string
		token  string
		status int
		reason string
	}{
		{"wrong audience", as.Token(t, "alice", testAudience, map[string]any{"aud": "https://other.example/mcp"}), 401, "audience"},
		{"expired", as.Token(t, "alice", testAudience, map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}), 401, "expired"},
		{"no exp", as.Token(t, "alice", testAudience, map[string]any{"exp": nil}), 401, "no exp"},
		{"not yet valid", as.Token(t, "alice", testAudience, map[string]any{"nbf": time.Now().Add(time.Hour).Unix()}), 401, "not valid yet"},
		{"wrong issuer", as.Token(t, "alice", testAudience, map[string]any{"iss": "https://evil.example"}), 401, "issued by"},
		{"missing scope", as.Token(t, "alice", testAudience, map[string]any{"scope": "openid"}), 403, "mcp:tools"},
		{"no subject", as.Token(t, "", testAudience, nil), 401, "sub"},
		{"HS256 with the RSA public key as secret", signWith(t, jose.HS256, rsaPubBytes(t, rsaPub), "k1", as.Claims("alice", testAudience, nil)), 401, "algorithm"},
		{"HS256", as.Sign(t, as.Claims("alice", testAudience, nil), &hsKey), 401, "algorithm"},
		{"alg none", noneToken(as.Claims("alice", testAudience, nil)), 401, "algorithm"},
		{"unknown signer, known kid", as.Sign(t, as.Claims("alice", testAudience, nil), &jose.JSONWebKey{Key: ecKey, KeyID: "k1", Algorithm: "ES256"}), 401, ""},
		{"garbage", "eyJhbGciOiJSUzI1NiJ9.e30.AAAA", 401, ""},
		{"not a key", "ci-bot-key-012345678", 401, "invalid bearer token"},
	} {
		_, f := a.Authenticate(ctx, bearer(tc.token))
		if f == nil || f.Status != tc.status || !strings.Contains(f.Reason, tc.reason) {
			t.Errorf("%s: %+v, want %d with %q", tc.name, f, tc.status, tc.reason)
		}
		if f != nil && strings.Contains(f.Reason, tc.token) {
			t.Errorf("%s: the reason quotes the token", tc.name)
		}
	}
	if _, f := a.Authenticate(ctx, "Basic abc"); f == nil || f.Status != 401 {
		t.Errorf("Basic: %+v", f)
	}
}

// TestOAuthKeyRotation: a token signed by a key the cached set lacks makes
// the set be fetched again, once per period however many such tokens come.
func TestOAuthKeyRotation(t *testing.T) {
	t.Parallel()
	as := authtest.New(t)
	a := newTestAuth(t, as)
	now := time.Now()
	a.oa.keys.now = func() time.Time { return now }
	ctx := context.Background()
	if _, f := a.Authenticate(ctx, "Bearer "+as.Token(t, "alice", testAudience, nil)); f != nil {
		t.Fatal(f)
	}
	as.Rotate(t, "k2")
	tok := "Bearer " + as.Token(t, "alice", testAudience, nil)
	now = now.Add(jwksMinRefresh)
	if _, f := a.Authenticate(ctx, tok); f != nil {
		t.Fatalf("token of the rotated key refused: %v", f)
	}
	fetches := as.JWKSFetches()
	stranger := mustRSA(t)
	for i := range 50 {
		kid := "made-up-" + string(rune('a'+i%26))
		_, f := a.Authenticate(ctx, "Bearer "+as.Sign(t, as.Claims("alice", testAudience, nil), &jose.JSONWebKey{Key: stranger, KeyID: kid, Algorithm: "RS256"}))
		if f == nil || !strings.Contains(f.Reason, "does not publish") {
			t.Fatalf("unknown kid: %+v", f)
		}
	}
	if n := as.JWKSFetches() - fetches; n > 1 {
		t.Errorf("%d fetches for 50 unknown kids within one period, want at most 1", n)
	}
}

// TestMiddleware: the answers a client sees.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	as := authtest.New(t)
	a := newTestAuth(t, as)
	var seen *Identity
	srv := httptest.NewServer(a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = FromContext(r.Context())
	})))
	defer srv.Close()
	get := func(path, authz string) *http.Response { return getWith(t, srv.URL+path, authz) }
	resp := get("/mcp", "")
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	resp = get("/mcp", "Bearer "+as.Token(t, "alice", testAudience, map[string]any{"scope": "openid"}))
	if h := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 403 || !strings.Contains(h, `error="insufficient_scope"`) || !strings.Contains(h, `scope="mcp:tools"`) {
		t.Errorf("missing scope: %d %q", resp.StatusCode, h)
	}
	if resp = get("/mcp", "Bearer "+as.Token(t, "alice", testAudience, nil)); resp.StatusCode != 200 || seen == nil || seen.Subject != "alice" {
		t.Errorf("good token: %d %+v", resp.StatusCode, seen)
	}
	req, _ := http.NewRequest("GET", srv.URL+MetadataPath+"/mcp", nil)
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	var meta map[string]any
	if err := json.NewDecoder(mresp.Body).Decode(&meta); err != nil || meta["resource"] != testAudience || meta["authorization_servers"].([]any)[0] != as.URL {
		t.Errorf("metadata: %v %v", meta, err)
	}
	if resp = get("/healthz", ""); resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
}

func mustRSA(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rsaPubBytes is the RSA public key's JWK, the bytes an attacker would
// use as an HMAC secret in an algorithm-confusion attack.
func rsaPubBytes(t testing.TB, k jose.JSONWebKey) []byte {
	b, err := k.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func signWith(t testing.TB, alg jose.SignatureAlgorithm, key []byte, kid string, claims map[string]any) string {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// noneToken is an unsigned JWT (alg "none"), which go-jose cannot make.
func noneToken(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return strings.TrimRight(base64URL(b), "=")
	}
	return enc(map[string]string{"alg": "none", "kid": "k1"}) + "." + enc(claims) + "."
}

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// TestRememberedTokenExpires: a token that verified is not taken on trust
// past its exp.
func TestRememberedTokenExpires(t *testing.T) {
	t.Parallel()
	as := authtest.New(t)
	a := newTestAuth(t, as)
	now := time.Now()
	a.oa.now = func() time.Time { return now }
	tok := "Bearer " + as.Token(t, "alice", testAudience, map[string]any{"exp": now.Add(2 * time.Minute).Unix()})
	if _, f := a.Authenticate(context.Background(), tok); f != nil {
		t.Fatal(f)
	}
	now = now.Add(3 * time.Minute)
	if _, f := a.Authenticate(context.Background(), tok); f == nil || !strings.Contains(f.Reason, "expired") {
		t.Fatalf("expired remembered token: %+v", f)
	}
}

// TestKnownKeysDoNotWaitForAFetch: while the key set is being fetched again
// for a token with an unknown kid, a token signed with a known key
// verifies without waiting for it; the first then gets its answer once the
// fetch ends.
func TestKnownKeysDoNotWaitForAFetch(t *testing.T) {
	t.Parallel()
	as := authtest.New(t)
	a := newTestAuth(t, as)
	ctx := context.Background()
	if _, f := a.Authenticate(ctx, "Bearer "+as.Token(t, "alice", testAudience, nil)); f != nil {
		t.Fatal(f)
	}
	now := time.Now().Add(jwksMinRefresh)
	a.oa.keys.now = func() time.Time { return now }
	release := as.HoldJWKS()
	defer release()
	unknown := make(chan *Failure, 1)
	go func() {
		_, f := a.Authenticate(ctx, "Bearer "+as.Sign(t, as.Claims("bob", testAudience, nil), &jose.JSONWebKey{Key: mustRSA(t), KeyID: "new", Algorithm: "RS256"}))
		unknown <- f
	}()
	for as.JWKSFetches() < 2 { // the unknown kid's fetch is held
		runtime.Gosched()
	}
	if _, f := a.Authenticate(ctx, "Bearer "+as.Token(t, "carol", testAudience, nil)); f != nil {
		t.Fatalf("a token with a known key: %v", f)
	}
	release()
	if f := <-unknown; f == nil || !strings.Contains(f.Reason, "does not publish") {
		t.Fatalf("unknown kid: %+v", f)
	}
}

// TestKeysOnlyIsNoOAuthResource: a listener with API keys alone answers a
// wrong key with 403 and no challenge (MCP clients start an OAuth login on
// any 401), a missing one with a 401 that names no OAuth metadata, and has
// no metadata at any well-known path, so that an OAuth-capable client
// reports the key instead of starting a login.
func TestKeysOnlyIsNoOAuthResource(t *testing.T) {
	t.Parallel()
	key := KeyFromValue("ci", "a-key-of-sixteen-bytes-or-more")
	key.Subject = "ci"
	a, err := New(Config{Keys: []Key{key}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer srv.Close()
	do := func(path, authz string) *http.Response { return getWith(t, srv.URL+path, authz) }
	resp := do("/mcp", "Bearer not-the-key")
	if h := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 403 || h != "" {
		t.Errorf("a wrong key: %d %q, want 403 with no challenge", resp.StatusCode, h)
	}
	if h := do("/mcp", "").Header.Get("WWW-Authenticate"); h != `Bearer realm="mcphost"` {
		t.Errorf("no key: %q", h)
	}
	for _, p := range []string{MetadataPath, MetadataPath + "/mcp", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		if resp := do(p, ""); resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
	if resp := do("/mcp", "Bearer a-key-of-sixteen-bytes-or-more"); resp.StatusCode != 200 {
		t.Errorf("the key: %d", resp.StatusCode)
	}
}

// TestIDTokensRefused: an OpenID Connect ID token whose audience is this
// server (some providers let a client ask for one) is no access token,
// whatever its signature: refused by its claims, or by its typ header;
// access tokens typed at+jwt, JWT or not at all pass.
func TestIDTokensRefused(t *testing.T) {
	t.Parallel()
	as := authtest.New(t)
	a := newTestAuth(t, as)
	ctx := context.Background()
	if _, f := a.Authenticate(ctx, "Bearer "+as.IDToken(t, "alice", testAudience)); f == nil || f.Status != 401 || !strings.Contains(f.Reason, "ID token") {
		t.Errorf("an ID token: %v, want 401 saying it is an ID token", f)
	}
	claims := as.Claims("alice", testAudience, nil)
	for typ, ok := range map[string]bool{"at+jwt": true, "application/at+jwt": true, "JWT": true, "": true,
		"id_token+jwt": false, "logout+jwt": false, "secevent+jwt": false} {
		_, f := a.Authenticate(ctx, "Bearer "+as.SignTyped(t, claims, typ))
		if ok != (f == nil) {
			t.Errorf("typ %q: %v, want accepted %v", typ, f, ok)
		}
	}
	for _, extra := range []map[string]any{{"nonce": "n"}, {"at_hash": "x"}, {"c_hash": "x"}, {"typ": "ID"}} {
		if _, f := a.Authenticate(ctx, "Bearer "+as.SignTyped(t, as.Claims("alice", testAudience, extra), "JWT")); f == nil {
			t.Errorf("a JWT with %v: accepted", extra)
		}
	}
}

// getWith GETs url with an Authorization header (none when authz is empty)
// and returns the answer, its body closed.
func getWith(t *testing.T, url, authz string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}
