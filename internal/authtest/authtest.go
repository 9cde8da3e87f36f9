// Package authtest runs a small OAuth 2.1 authorization server on
// loopback for tests: RFC 8414 metadata, a JWKS endpoint, real signed
// access tokens (RS256, through go-jose) and key rotation; the
// client_credentials grant; token exchange (RFC 8693, exchange.go); and
// what the client side of the MCP
// authorization spec needs (codeflow.go): dynamic client registration
// (RFC 7591), the authorization code grant with PKCE, resource indicators
// (RFC 8707) and the iss response parameter (RFC 9207), rotating refresh
// tokens, revocation, and counters.
package authtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Server is the authorization server. Its issuer is URL; its token
// endpoint, URL+"/token", grants client_credentials to the clients added
// with AddClient, and authorization_code and refresh_token to clients with
// redirect URIs (added, or registered at URL+"/register"). See codeflow.go.
type Server struct {
	URL       string
	srv       *httptest.Server
	mu        sync.Mutex
	keys      []jose.JSONWebKey // private, the current one first
	clients   map[string]Client // by client id
	hold      chan struct{}     // while not nil, key set requests wait for it to close
	jwksFetch atomic.Int32
	code      codeState // the authorization code grant's state, under mu
}

// HoldJWKS makes key set requests wait until release is called.
func (as *Server) HoldJWKS() (release func()) {
	ch := make(chan struct{})
	as.mu.Lock()
	as.hold = ch
	as.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			as.mu.Lock()
			as.hold = nil
			as.mu.Unlock()
			close(ch)
		})
	}
}

// Client is a registered OAuth client and the access tokens it gets.
type Client struct {
	Secret string // "" for a public client (token_endpoint_auth_method none)
	// AssertionKey, when set, is the public key of a private_key_jwt
	// client (RFC 7523): it authenticates with a signed assertion.
	AssertionKey *jose.JSONWebKey
	Subject      string         // client_credentials: the tokens' sub
	Audience     string         // client_credentials: the tokens' aud
	Extra        map[string]any // claims over Claims' defaults

	// RedirectURIs are where authorization responses may go: a client
	// needs one for the authorization code grant.
	RedirectURIs []string
	// GrantTypes the client may use; empty allows every grant.
	GrantTypes []string
	Name       string // client_name, as registered
}

func (c Client) allows(grant string) bool {
	return len(c.GrantTypes) == 0 || slices.Contains(c.GrantTypes, grant)
}

// AddClient registers a client: for the client_credentials grant (with a
// Secret), or for the authorization code grant (with RedirectURIs).
func (as *Server) AddClient(id string, c Client) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.clients[id] = c
}

// Client returns a registered client.
func (as *Server) Client(id string) (Client, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	c, ok := as.clients[id]
	return c, ok
}

// New starts a Server with one RSA key, "k1"; it stops with the test.
func New(t testing.TB) *Server {
	as := &Server{clients: map[string]Client{}}
	as.code.init()
	as.Rotate(t, "k1")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		as.mu.Lock()
		scopes := as.code.scopes
		as.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                         as.URL,
			"authorization_endpoint":                         as.URL + "/authorize",
			"token_endpoint":                                 as.URL + "/token",
			"registration_endpoint":                          as.URL + "/register",
			"jwks_uri":                                       as.URL + "/jwks",
			"scopes_supported":                               scopes,
			"response_types_supported":                       []string{"code"},
			"grant_types_supported":                          []string{"authorization_code", "refresh_token", "client_credentials", GrantTokenExchange},
			"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"},
			"code_challenge_methods_supported":               []string{"S256"},
			"authorization_response_iss_parameter_supported": true,
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		as.jwksFetch.Add(1)
		as.mu.Lock()
		hold := as.hold
		as.mu.Unlock()
		if hold != nil {
			<-hold
		}
		w.Header().Set("Content-Type", "application/json")
		as.mu.Lock()
		defer as.mu.Unlock()
		var set jose.JSONWebKeySet
		for _, k := range as.keys {
			set.Keys = append(set.Keys, k.Public())
		}
		json.NewEncoder(w).Encode(set)
	})
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /register", as.register)
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		grant := r.PostFormValue("grant_type")
		if status := as.countToken(grant); status != 0 {
			oauthError(w, status, "temporarily_unavailable", "the authorization server is down")
			return
		}
		id, secret, ok := r.BasicAuth()
		if ok { // RFC 6749 section 2.3.1: form-encoded before Basic
			id, _ = url.QueryUnescape(id)
			secret, _ = url.QueryUnescape(secret)
		} else {
			id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		}
		as.mu.Lock()
		c, known := as.clients[id]
		as.mu.Unlock()
		if r.PostFormValue("client_assertion_type") != "" || c.AssertionKey != nil {
			if ok || secret != "" {
				oauthError(w, http.StatusUnauthorized, "invalid_client", "a private_key_jwt client sends no secret")
				return
			}
			if err := as.checkAssertion(r, id, c); err != nil {
				oauthError(w, http.StatusUnauthorized, "invalid_client", err.Error())
				return
			}
			secret = c.Secret // authenticated by the assertion
		}
		switch grant {
		case "client_credentials", "authorization_code", "refresh_token", GrantTokenExchange:
		default:
			oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "")
			return
		}
		if !known || subtle.ConstantTimeCompare([]byte(secret), []byte(c.Secret)) != 1 || (grant == "client_credentials" && c.Secret == "" && c.AssertionKey == nil) {
			oauthError(w, http.StatusUnauthorized, "invalid_client", "")
			return
		}
		if !c.allows(grant) {
			oauthError(w, http.StatusBadRequest, "unauthorized_client", "the client did not register for "+grant)
			return
		}
		switch grant {
		case "authorization_code":
			as.exchangeCode(w, r, id, c)
			return
		case "refresh_token":
			as.refreshToken(w, r, id, c)
			return
		case GrantTokenExchange:
			as.exchangeToken(w, r, id, c)
			return
		}
		tok, err := as.sign(as.Claims(c.Subject, c.Audience, c.Extra), nil)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	as.srv = httptest.NewServer(mux)
	as.URL = as.srv.URL
	t.Cleanup(as.srv.Close)
	return as
}

// oauthError answers an OAuth error response (RFC 6749 section 5.2).
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body := map[string]string{"error": code}
	if desc != "" {
		body["error_description"] = desc
	}
	json.NewEncoder(w).Encode(body)
}

// JWKSFetches counts the requests for the key set.
func (as *Server) JWKSFetches() int32 { return as.jwksFetch.Load() }

// Rotate makes a new RSA key named kid the signing key, keeping the old
// ones published.
func (as *Server) Rotate(t testing.TB, kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.keys = append([]jose.JSONWebKey{{Key: k, KeyID: kid, Algorithm: "RS256", Use: "sig"}}, as.keys...)
}

// PublicKey is the current signing key's public half.
func (as *Server) PublicKey() jose.JSONWebKey {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.keys[0].Public()
}

// Sign signs claims with the current key, or with key if not nil.
func (as *Server) Sign(t testing.TB, claims map[string]any, key *jose.JSONWebKey) string {
	s, err := as.sign(claims, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (as *Server) sign(claims map[string]any, key *jose.JSONWebKey) (string, error) {
	return as.signTyped(claims, key, "at+jwt")
}

// signTyped signs claims with the JWT header typ given (RFC 9068's at+jwt
// for access tokens).
func (as *Server) signTyped(claims map[string]any, key *jose.JSONWebKey, typ jose.ContentType) (string, error) {
	as.mu.Lock()
	k := as.keys[0]
	as.mu.Unlock()
	if key != nil {
		k = *key
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(k.Algorithm), Key: k}, (&jose.SignerOptions{}).WithType(typ))
	if err != nil {
		return "", err
	}
	return jwt.Signed(sig).Claims(claims).Serialize()
}

// Claims are an access token's claims for sub and audience, valid for an
// hour, with scope "mcp:tools openid", groups ["eng"] and team "platform";
// extra overrides them (a nil value removes a claim).
func (as *Server) Claims(sub, audience string, extra map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": as.URL, "aud": audience, "sub": sub, "exp": now.Add(time.Hour).Unix(),
		"iat": now.Unix(), "scope": "mcp:tools openid", "groups": []string{"eng"}, "team": "platform"}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// IDToken is an OpenID Connect ID token for sub, issued to the client
// audience: typ "JWT", with a nonce, at_hash and auth_time. Some identity
// providers let a client ask for one whose audience is a resource's.
func (as *Server) IDToken(t testing.TB, sub, audience string) string {
	t.Helper()
	claims := as.Claims(sub, audience, map[string]any{"nonce": "n-0S6_WzA2Mj", "at_hash": "77QmUPtjPfzWtF2AnpK9RQ", "auth_time": time.Now().Unix(), "scope": nil})
	s, err := as.signTyped(claims, nil, "JWT")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SignTyped is Sign with the JWT header typ given.
func (as *Server) SignTyped(t testing.TB, claims map[string]any, typ string) string {
	t.Helper()
	s, err := as.signTyped(claims, nil, jose.ContentType(typ))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Token is a signed access token for sub and audience (see Claims).
func (as *Server) Token(t testing.TB, sub, audience string, extra map[string]any) string {
	return as.Sign(t, as.Claims(sub, audience, extra), nil)
}
