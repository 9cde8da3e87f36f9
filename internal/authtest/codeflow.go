package authtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The authorization code grant, as the MCP authorization spec's client
// side uses it: a client registers (RFC 7591) or is added with redirect
// URIs, sends the user to GET /authorize with PKCE (S256), state, scope
// and resource (RFC 8707), and gets a code back at its redirect URI with
// state and iss (RFC 9207). The user's consent is a setting (SetConsent):
// a test stands in for the browser by following the redirect. POST /token
// exchanges the code once, and refresh tokens rotate: each works once.
// Access tokens are JWTs for the resource, with the granted scope, a jti,
// and the lifetime of SetAccessTokenLifetime.

// Consent is what the user answers at the authorization endpoint.
type Consent int

const (
	// Allow redirects at once to the redirect URI with a code.
	Allow Consent = iota
	// Deny redirects at once with error=access_denied.
	Deny
	// Hold answers 200 and keeps the redirect, with its code, for Held:
	// the user has not clicked yet.
	Hold
)

// DefaultScopes are the scopes_supported of a new Server.
var DefaultScopes = []string{"mcp:tools", "mcp:admin", "openid", "offline_access"}

// DefaultUser is the subject of the tokens the code grant issues, until
// SetUser.
const DefaultUser = "alice"

// codeLifetime bounds how long an authorization code may be exchanged.
const codeLifetime = time.Minute

// codeState is the authorization code grant's state, under Server.mu.
type codeState struct {
	assertions map[string]bool // client assertion jtis seen (private_key_jwt)
	user       string
	consent    Consent
	lifetime   time.Duration
	noRefresh  bool
	scopes     []string

	codes   map[string]*codeGrant    // by code
	refresh map[string]*tokenGrant   // live refresh tokens
	access  map[string]*issuedAccess // access tokens issued by the code and refresh grants
	secrets []string                 // every code, access and refresh token issued
	held    []string
	last    url.Values // the last valid authorization request

	failTokens     int // while not 0, the token endpoint answers this status
	seq            int
	authorizations int
	registrations  int
	tokenRequests  map[string]int // by grant_type
}

func (c *codeState) init() {
	c.user, c.lifetime, c.scopes = DefaultUser, time.Hour, slices.Clone(DefaultScopes)
	c.codes, c.refresh, c.access = map[string]*codeGrant{}, map[string]*tokenGrant{}, map[string]*issuedAccess{}
	c.tokenRequests = map[string]int{}
}

// tokenGrant is what a code or a refresh token stands for.
type tokenGrant struct {
	client, user, scope, resource string
}

type codeGrant struct {
	tokenGrant
	redirect, challenge string
	expires             time.Time
}

type issuedAccess struct {
	revoked bool
}

// SetConsent sets what the user answers from now on (Allow by default).
func (as *Server) SetConsent(c Consent) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.code.consent = c
}

// SetUser sets the subject of the tokens the code grant issues from now on.
func (as *Server) SetUser(sub string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.code.user = sub
}

// SetAccessTokenLifetime sets the lifetime (expires_in and exp) of the
// access tokens the code and refresh grants issue from now on; an hour by
// default.
func (as *Server) SetAccessTokenLifetime(d time.Duration) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.code.lifetime = d
}

// IssueRefreshTokens sets whether the code grant issues refresh tokens (it
// does by default).
func (as *Server) IssueRefreshTokens(on bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.code.noRefresh = !on
}

// FailTokenRequests makes the token endpoint answer status (a 5xx: an
// outage) with error temporarily_unavailable to every grant; 0 ends it.
func (as *Server) FailTokenRequests(status int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.code.failTokens = status
}

// Held returns the redirects, with their codes, that Hold kept since the
// last call, oldest first: following one is the user's click.
func (as *Server) Held() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	h := as.code.held
	as.code.held = nil
	return h
}

// RevokeRefreshTokens revokes every refresh token issued so far: refreshing
// with one gets invalid_grant.
func (as *Server) RevokeRefreshTokens() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.code.refresh)
}

// RevokeAccessTokens revokes every access token the code and refresh
// grants issued so far. The tokens are JWTs, which a resource server
// checks by itself; one that wants to honour revocation asks Revoked (as
// it would the introspection endpoint of RFC 7662).
func (as *Server) RevokeAccessTokens() {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, a := range as.code.access {
		a.revoked = true
	}
}

// Revoked reports whether token is an access token this server issued and
// then revoked.
func (as *Server) Revoked(token string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	a := as.code.access[token]
	return a != nil && a.revoked
}

// Authorizations counts the authorization requests that passed the
// checks, whatever the consent.
func (as *Server) Authorizations() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.code.authorizations
}

// LastAuthorization is the query of the last authorization request that
// passed the checks (nil before one).
func (as *Server) LastAuthorization() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return maps.Clone(as.code.last)
}

// Registrations counts the clients registered at the registration endpoint.
func (as *Server) Registrations() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.code.registrations
}

// TokenRequests counts the requests to the token endpoint with grant_type
// grant, answered or refused.
func (as *Server) TokenRequests(grant string) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.code.tokenRequests[grant]
}

// IssuedSecrets are every authorization code, access token and refresh
// token issued so far: what must never show in a client's logs.
func (as *Server) IssuedSecrets() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.code.secrets)
}

// countToken counts a token request; it returns the status to fail it
// with, if any (FailTokenRequests).
func (as *Server) countToken(grant string) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.code.tokenRequests[grant]++
	return as.code.failTokens
}

// secretLocked is a new random value for a code or token, kept for IssuedSecrets.
func (as *Server) secretLocked(prefix string) string {
	s := prefix + rand.Text()
	as.code.secrets = append(as.code.secrets, s)
	return s
}

// register is the registration endpoint (RFC 7591 section 3).
func (as *Server) register(w http.ResponseWriter, r *http.Request) {
	var m struct {
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		GrantTypes              []string `json:"grant_types"`
		ResponseTypes           []string `json:"response_types"`
		ClientName              string   `json:"client_name"`
		Scope                   string   `json:"scope"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&m); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body is not client metadata: "+err.Error())
		return
	}
	if len(m.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "redirect_uris is required")
		return
	}
	for _, u := range m.RedirectURIs {
		if err := checkRedirect(u); err != nil {
			oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", err.Error())
			return
		}
	}
	if m.TokenEndpointAuthMethod == "" {
		m.TokenEndpointAuthMethod = "client_secret_basic" // RFC 7591 section 2
	}
	if !slices.Contains([]string{"none", "client_secret_basic", "client_secret_post"}, m.TokenEndpointAuthMethod) {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "token_endpoint_auth_method "+m.TokenEndpointAuthMethod+" is not supported")
		return
	}
	if len(m.GrantTypes) == 0 {
		m.GrantTypes = []string{"authorization_code"}
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "grant type "+g+" cannot be registered")
			return
		}
	}
	if len(m.ResponseTypes) == 0 {
		m.ResponseTypes = []string{"code"}
	}
	if !slices.Equal(m.ResponseTypes, []string{"code"}) {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "response_types must be [code]")
		return
	}
	as.mu.Lock()
	as.code.seq++
	id := fmt.Sprintf("dyn-%d", as.code.seq)
	c := Client{RedirectURIs: m.RedirectURIs, GrantTypes: m.GrantTypes, Name: m.ClientName}
	if m.TokenEndpointAuthMethod != "none" {
		c.Secret = as.secretLocked("cs-")
	}
	as.clients[id] = c
	as.code.registrations++
	as.mu.Unlock()
	resp := map[string]any{
		"client_id": id, "client_id_issued_at": time.Now().Unix(),
		"redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": m.TokenEndpointAuthMethod,
		"grant_types": m.GrantTypes, "response_types": m.ResponseTypes, "client_name": m.ClientName,
	}
	if c.Secret != "" {
		resp["client_secret"], resp["client_secret_expires_at"] = c.Secret, 0
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(resp)
}

// checkRedirect accepts an absolute http(s) URL without a fragment.
func checkRedirect(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("redirect URI %q is not an absolute http(s) URL without a fragment", s)
	}
	return nil
}

// authorize is the authorization endpoint (RFC 6749 section 4.1.1, with
// PKCE, RFC 7636, and resource, RFC 8707). A request whose client or
// redirect URI is wrong is answered 400 here; any other error goes back
// to the redirect URI (section 4.1.2.1).
func (as *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, redirect := q.Get("client_id"), q.Get("redirect_uri")
	as.mu.Lock()
	c, known := as.clients[id]
	as.mu.Unlock()
	if !known {
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	}
	if redirect == "" || !slices.Contains(c.RedirectURIs, redirect) {
		http.Error(w, "redirect_uri is not one the client registered", http.StatusBadRequest)
		return
	}
	state := q.Get("state")
	fail := func(code, desc string) {
		http.Redirect(w, r, as.redirectTo(redirect, url.Values{"error": {code}, "error_description": {desc}, "state": {state}}), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "response_type must be code")
		return
	case !c.allows("authorization_code"):
		fail("unauthorized_client", "the client did not register for authorization_code")
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "PKCE with code_challenge_method S256 is required")
		return
	case state == "":
		fail("invalid_request", "state is required")
		return
	}
	resource := q.Get("resource")
	if u, err := url.Parse(resource); resource == "" || err != nil || !u.IsAbs() || u.Fragment != "" {
		fail("invalid_target", "resource must be the absolute URI of the MCP server")
		return
	}
	scope := strings.Fields(q.Get("scope"))
	as.mu.Lock()
	supported := as.code.scopes
	as.mu.Unlock()
	for _, s := range scope {
		if len(supported) > 0 && !slices.Contains(supported, s) {
			fail("invalid_scope", "scope "+s+" is not supported")
			return
		}
	}

	as.mu.Lock()
	as.code.authorizations++
	as.code.last = q
	consent := as.code.consent
	var code string
	if consent != Deny {
		code = as.secretLocked("code-")
		as.code.codes[code] = &codeGrant{
			tokenGrant: tokenGrant{client: id, user: as.code.user, scope: strings.Join(scope, " "), resource: resource},
			redirect:   redirect, challenge: q.Get("code_challenge"), expires: time.Now().Add(codeLifetime),
		}
	}
	to := as.redirectTo(redirect, url.Values{"code": {code}, "state": {state}})
	if consent == Hold {
		as.code.held = append(as.code.held, to)
	}
	as.mu.Unlock()
	switch consent {
	case Deny:
		fail("access_denied", "the user refused")
	case Hold:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>authtest</title><p>Waiting for the user to allow access.\n")
	default:
		http.Redirect(w, r, to, http.StatusFound)
	}
}

// redirectTo is redirect with params and iss added to its query.
func (as *Server) redirectTo(redirect string, params url.Values) string {
	u, _ := url.Parse(redirect) // checked when registered
	q := u.Query()
	for k, v := range params {
		if len(v) > 0 && v[0] != "" {
			q[k] = v
		}
	}
	q.Set("iss", as.URL)
	u.RawQuery = q.Encode()
	return u.String()
}

// exchangeCode is the authorization_code grant (RFC 6749 section 4.1.3,
// RFC 7636 section 4.6).
func (as *Server) exchangeCode(w http.ResponseWriter, r *http.Request, client string, c Client) {
	code := r.PostFormValue("code")
	as.mu.Lock()
	g := as.code.codes[code]
	delete(as.code.codes, code) // one use, whatever comes of it
	as.mu.Unlock()
	switch {
	case g == nil || time.Now().After(g.expires):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown, used or expired code")
		return
	case g.client != client:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
		return
	case r.PostFormValue("redirect_uri") != g.redirect:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
		return
	}
	verifier := r.PostFormValue("code_verifier")
	sum := sha256.Sum256([]byte(verifier))
	if len(verifier) < 43 || len(verifier) > 128 || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
		return
	}
	if res := r.PostFormValue("resource"); res != "" && res != g.resource {
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request's")
		return
	}
	as.issue(w, g.tokenGrant, c)
}

// refreshToken is the refresh_token grant (RFC 6749 section 6): the refresh
// token is used up and a new one comes with the new access token.
func (as *Server) refreshToken(w http.ResponseWriter, r *http.Request, client string, c Client) {
	rt := r.PostFormValue("refresh_token")
	as.mu.Lock()
	g := as.code.refresh[rt]
	if g != nil && g.client == client {
		delete(as.code.refresh, rt)
	}
	as.mu.Unlock()
	if g == nil || g.client != client {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown, used or revoked refresh token")
		return
	}
	next := *g
	if s := r.PostFormValue("scope"); s != "" {
		for _, x := range strings.Fields(s) {
			if !slices.Contains(strings.Fields(g.scope), x) {
				oauthError(w, http.StatusBadRequest, "invalid_scope", "scope "+x+" was not granted")
				return
			}
		}
		next.scope = s
	}
	if res := r.PostFormValue("resource"); res != "" && res != g.resource {
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the grant's")
		return
	}
	as.issue(w, next, c)
}

// issue answers a token response for g: an access token for its resource
// and scope and, unless turned off or not registered for, a refresh token.
func (as *Server) issue(w http.ResponseWriter, g tokenGrant, c Client) {
	as.mu.Lock()
	life := as.code.lifetime
	as.code.seq++
	jti := fmt.Sprintf("at-%d", as.code.seq)
	as.mu.Unlock()
	extra := map[string]any{"scope": g.scope, "exp": time.Now().Add(life).Unix(), "jti": jti, "client_id": g.client}
	tok, err := as.sign(as.Claims(g.user, g.resource, extra), nil)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	resp := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(life.Seconds()), "scope": g.scope}
	as.mu.Lock()
	as.code.access[tok] = &issuedAccess{}
	as.code.secrets = append(as.code.secrets, tok)
	if !as.code.noRefresh && c.allows("refresh_token") {
		rt := as.secretLocked("rt-")
		as.code.refresh[rt] = &g
		resp["refresh_token"] = rt
	}
	as.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(resp)
}
