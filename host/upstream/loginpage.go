package upstream

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/auth"
)

// The login page: a login link of a running mcphost opens a page of its
// own, not the authorization server's, so that a login completes only for
// the identity it was issued to. The page says whose access is being
// granted and asks the person to prove they are that identity, with the
// credential listen.auth knows it by (an API key, or an access token of
// its identity provider), or, for the gateway's own login (mode
// "shared", and the login that lists a per_user server's tools), to be an
// administrator. Then, and only then, it sets a cookie bound to that one
// login (HttpOnly, SameSite=Lax, for as long as the login lasts) and sends
// the browser on to the authorization server. The callback refuses the
// login's code in a browser without that cookie: a link forwarded past
// the page (the authorization server's own) completes nothing. Without
// listen.auth, anyone who reaches mcphost administers it, and the page
// asks for nothing; a per_user login cannot exist there.
//
// When the upstream's authorization server is the issuer listen.auth
// trusts, a caller's grant must name the caller's own subject besides
// (sameSubject): a browser signed in there as someone else gets nothing.

// loginCookiePrefix starts the name of a login's cookie; its id follows.
const loginCookiePrefix = "mcphost_login_"

// MaxLoginForm bounds the login page's form.
const MaxLoginForm = 16 << 10

// page sets where p's page is, beside the callback redirect comes back
// to (same scheme, host and path prefix: the cookie the page sets must
// reach the callback), and returns its link.
func (p *PendingLogin) page(redirect string) (string, error) {
	u, err := url.Parse(redirect)
	if err != nil || u.Host == "" || !strings.HasSuffix(u.Path, CallbackPath) {
		return "", fmt.Errorf("host: redirect_url %q does not end in %s, where mcphost serves the callback: its login page cannot be placed beside it", redirect, CallbackPath)
	}
	prefix := strings.TrimSuffix(u.Path, CallbackPath)
	p.cookiePath, p.secure = prefix+"/oauth/", u.Scheme == "https"
	page := url.URL{Scheme: u.Scheme, Host: u.Host, Path: prefix + LoginPath, RawQuery: url.Values{"login": {p.ID}}.Encode()}
	return page.String(), nil
}

// Grantee says whose access a login grants.
func (p *PendingLogin) Grantee() string {
	if p.Subject == "" {
		return "every caller of this mcphost (its shared account)"
	}
	return "mcphost user " + SubjectName(p.Subject)
}

// SubjectName is a grants.Grant.Subject as a person reads it: "bob (key)".
func SubjectName(subject string) string {
	method, name, ok := strings.Cut(subject, ":")
	if !ok {
		return subject
	}
	return name + " (" + method + ")"
}

// hasProofLocked reports whether r carries the cookie of whoever proved
// they may complete p; under Logins.mu.
func (p *PendingLogin) hasProofLocked(r *http.Request) bool {
	if p.proof == nil {
		return false
	}
	c, err := r.Cookie(loginCookiePrefix + p.ID)
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(c.Value))
	return subtle.ConstantTimeCompare(sum[:], p.proof) == 1
}

// ProofCookie is p's cookie with value; maxAge -1 deletes it.
func ProofCookie(p *PendingLogin, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: loginCookiePrefix + p.ID, Value: value, Path: p.cookiePath, MaxAge: maxAge,
		HttpOnly: true, Secure: p.secure, SameSite: http.SameSiteLaxMode}
}

func clearProofCookie(w http.ResponseWriter, p *PendingLogin) {
	http.SetCookie(w, ProofCookie(p, "", -1))
}

// ByLoginID is the bound login id names, nil if none is waiting.
func (l *Logins) ByLoginID(id string) *PendingLogin {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id == "" {
		return nil
	}
	return l.byID[id]
}

// Prove records that whoever gets the cookie value secret may complete p,
// and reports whether p still waits.
func (l *Logins) Prove(p *PendingLogin, secret string) bool {
	sum := sha256.Sum256([]byte(secret))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID[p.ID] != p {
		return false
	}
	p.proof = sum[:]
	return true
}

// SameCaller reports whether id, proved on the login page, is the caller
// whose grant subject is subject. A stdio client's identity is its
// stdio_key's, with the method "config": the key proves it.
func SameCaller(a *auth.Authenticator, id *auth.Identity, subject string) bool {
	if GrantSubject(id) == subject {
		return true
	}
	st := a.StdioIdentity()
	return st != nil && id.Method == abi.AuthKey && GrantSubject(st) == subject && id.Subject == st.Subject
}

// LoginForm is the page that asks for proof.
func LoginForm(p *PendingLogin, authenticates bool) string {
	e := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><title>mcphost: authorize %s</title><h1>Authorize mcphost for %s</h1>\n", e(p.Server), e(p.Server))
	if p.Subject == "" {
		fmt.Fprintf(&b, "<p><strong>You are granting mcphost access to %s for every caller of this mcphost.</strong> Whatever account you sign in with at the authorization server, every caller's request to %s will run as that account. Only an administrator of this mcphost may do this.</p>\n", e(p.Server), e(p.Server))
	} else {
		n := SubjectName(p.Subject)
		fmt.Fprintf(&b, "<p><strong>You are granting mcphost access to %s for mcphost user %s.</strong> The calls %s makes to %s through mcphost will run as the account you sign in with at the authorization server. Continue only if you are %s and asked for this login yourself.</p>\n", e(p.Server), e(n), e(n), e(p.Server), e(n))
	}
	b.WriteString(`<form method="post" action="login">` + "\n")
	fmt.Fprintf(&b, `<input type="hidden" name="login" value="%s">`+"\n", e(p.ID))
	if authenticates {
		b.WriteString(`<p><label>Prove who you are with the credential mcphost knows you by (your API key, or an access token of its identity provider): <input type="password" name="credential" autocomplete="off" required></label></p>` + "\n")
	} else {
		b.WriteString("<p>This mcphost does not authenticate its callers: anyone who reaches it may complete this login.</p>\n")
	}
	b.WriteString(`<p><button type="submit">Continue to the authorization server</button></p></form>` + "\n")
	return b.String()
}

func LoginPageError(w http.ResponseWriter, status int, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, page(title, body))
}

// sameSubject refuses a caller's grant whose tokens, from the issuer
// listen.auth trusts, name another subject than the caller's: the
// identity provider is shared, and the browser was signed in there as
// someone else. The tokens come straight from the token endpoint mcphost
// asked (over TLS in production, for a code only this login's PKCE
// verifier redeems): their claims are read without checking signatures,
// as OpenID Connect allows for an ID token from the token endpoint. A
// grant of an issuer that is not listen.auth's, or an opaque token, names
// nothing to compare: the login page's proof is the binding then.
func (f *CodeFlow) sameSubject(tok *oauth2.Token) error {
	if f.subject == "" || f.env.Authn == nil {
		return nil
	}
	method, want, _ := strings.Cut(f.subject, ":")
	a := f.env.Authn()
	if method != abi.AuthOAuth || a == nil {
		return nil
	}
	tokens := []string{tok.AccessToken}
	if id, _ := tok.Extra("id_token").(string); id != "" {
		tokens = append(tokens, id)
	}
	for _, t := range tokens {
		claims := JWTClaims(t)
		if claims == nil {
			continue
		}
		if got, ours := a.SubjectOf(claims); ours && got != want {
			return fmt.Errorf("host: the account signed in at the authorization server is %q, not %s, the mcphost user this login is for: sign in there as %s and start the login again", got, want, want)
		}
	}
	return nil
}

// jwtClaims is the claims of a JWT (its payload as a JSON object),
// unverified; nil for anything else.
func JWTClaims(token string) map[string]any {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > MaxLoginForm*4 {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var claims map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&claims) != nil || d.More() {
		return nil
	}
	return claims
}
