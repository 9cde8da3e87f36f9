package upstream

import (
	"bytes"
	"crypto/rand"
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
	"time"

	"github.com/hashicorp/go-hclog"
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

// maxLoginForm bounds the login page's form.
const maxLoginForm = 16 << 10

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

// grantee says whose access a login grants.
func (p *PendingLogin) grantee() string {
	if p.Subject == "" {
		return "every caller of this mcphost (its shared account)"
	}
	return "mcphost user " + subjectName(p.Subject)
}

// subjectName is a grants.Grant.Subject as a person reads it: "bob (key)".
func subjectName(subject string) string {
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

// proofCookie is p's cookie with value; maxAge -1 deletes it.
func proofCookie(p *PendingLogin, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: loginCookiePrefix + p.ID, Value: value, Path: p.cookiePath, MaxAge: maxAge,
		HttpOnly: true, Secure: p.secure, SameSite: http.SameSiteLaxMode}
}

func clearProofCookie(w http.ResponseWriter, p *PendingLogin) {
	http.SetCookie(w, proofCookie(p, "", -1))
}

// byLoginID is the bound login id names, nil if none is waiting.
func (l *Logins) byLoginID(id string) *PendingLogin {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id == "" {
		return nil
	}
	return l.byID[id]
}

// prove records that whoever gets the cookie value secret may complete p,
// and reports whether p still waits.
func (l *Logins) prove(p *PendingLogin, secret string) bool {
	sum := sha256.Sum256([]byte(secret))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID[p.ID] != p {
		return false
	}
	p.proof = sum[:]
	return true
}

// sameCaller reports whether id, proved on the login page, is the caller
// whose grant subject is subject. A stdio client's identity is its
// stdio_key's, with the method "config": the key proves it.
func sameCaller(a *auth.Authenticator, id *auth.Identity, subject string) bool {
	if grantSubject(id) == subject {
		return true
	}
	st := a.StdioIdentity()
	return st != nil && id.Method == abi.AuthKey && grantSubject(st) == subject && id.Subject == st.Subject
}

// loginForm is the page that asks for proof.
func loginForm(p *PendingLogin, authenticates bool) string {
	e := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><title>mcphost: authorize %s</title><h1>Authorize mcphost for %s</h1>\n", e(p.Server), e(p.Server))
	if p.Subject == "" {
		fmt.Fprintf(&b, "<p><strong>You are granting mcphost access to %s for every caller of this mcphost.</strong> Whatever account you sign in with at the authorization server, every caller's request to %s will run as that account. Only an administrator of this mcphost may do this.</p>\n", e(p.Server), e(p.Server))
	} else {
		n := subjectName(p.Subject)
		fmt.Fprintf(&b, "<p><strong>You are granting mcphost access to %s for mcphost user %s.</strong> The calls %s makes to %s through mcphost will run as the account you sign in with at the authorization server. Continue only if you are %s and asked for this login yourself.</p>\n", e(p.Server), e(n), e(n), e(p.Server), e(n))
	}
	b.WriteString(`<form method="post" action="login">` + "\n")
	fmt.Fprintf(&b, `<input type="hidden" name="login" value="%s">`+"\n", e(p.ID))
	if authenticates {
		b.WriteString(`<p><label>prove who you are with the credential mcphost knows you by (your API key, or an access token of its identity provider): <input type="password" name="credential" autocomplete="off" required></label></p>` + "\n")
	} else {
		b.WriteString("<p>This mcphost does not authenticate its callers: anyone who reaches it may complete this login.</p>\n")
	}
	b.WriteString(`<p><button type="submit">Continue to the authorization server</button></p></form>` + "\n")
	return b.String()
}

func loginPageError(w http.ResponseWriter, status int, title, body string) {
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
		claims := jwtClaims(t)
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
func jwtClaims(token string) map[string]any {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > maxLoginForm*4 {
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

// Serve is the login page (LoginPath): a is the listener's authenticator
// (nil when it takes anyone). The page: GET shows whose access the login grants
// and asks for proof; POST checks it and sends the browser on to the
// authorization server with the login's cookie.
func (l *Logins) Serve(w http.ResponseWriter, r *http.Request, a *auth.Authenticator, log hclog.Logger) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY") // no click on a page the user does not see
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
		if err := r.ParseForm(); err != nil {
			loginPageError(w, http.StatusBadRequest, "Login refused", "The form could not be read: "+err.Error())
			return
		}
	}
	p := l.byLoginID(r.FormValue("login"))
	if p == nil {
		loginPageError(w, http.StatusBadRequest, "Login refused", "This link does not belong to a login mcphost is waiting for (wrong or expired). Call the server again for a new link (an administrator: see mcphost status).")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, loginForm(p, a != nil))
		return
	}
	who := "anyone (this mcphost does not authenticate its callers)"
	if a != nil {
		id, f := a.Authenticate(r.Context(), "Bearer "+r.PostFormValue("credential"))
		switch {
		case f != nil:
			log.Info("login page: a credential was refused", "server", p.Server, "reason", f.Reason)
			loginPageError(w, http.StatusForbidden, "Login refused", fmt.Sprintf("That is not a credential of this mcphost (%s). You are granting mcphost access to %s for %s: prove who you are with the credential mcphost knows you by.", f.Reason, p.Server, p.grantee()))
			return
		case p.Subject == "" && !a.IsAdmin(id):
			log.Info("login page: the gateway's own login refused to a caller who is no administrator", "server", p.Server, "caller", id.String())
			loginPageError(w, http.StatusForbidden, "Login refused", fmt.Sprintf("You are %s, who is no administrator of this mcphost. This login picks the account %s uses for %s: only an administrator (listen.auth.admin_groups) may complete it, here or with: mcphost auth login %s CONFIG.", subjectName(grantSubject(id)), p.grantee(), p.Server, p.Server))
			return
		case p.Subject != "" && !sameCaller(a, id, p.Subject):
			log.Info("login page: a caller's login refused to someone else", "server", p.Server, "for", p.Subject, "caller", id.String())
			loginPageError(w, http.StatusForbidden, "Login refused", fmt.Sprintf("This login was issued to mcphost user %s, and you are %s. Each caller completes their own login: call %s through mcphost for your own link.", subjectName(p.Subject), subjectName(grantSubject(id)), p.Server))
			return
		}
		who = id.String()
	} else if p.Subject != "" {
		loginPageError(w, http.StatusForbidden, "Login refused", "This mcphost no longer authenticates its callers: no one can prove this login is theirs.")
		return
	}
	secret := rand.Text()
	if !l.prove(p, secret) {
		loginPageError(w, http.StatusBadRequest, "Login refused", "This login ended meanwhile. Call the server again for a new link.")
		return
	}
	http.SetCookie(w, proofCookie(p, secret, max(1, int(time.Until(p.Expires).Seconds()))))
	log.Info("login page: identity proved, on to the authorization server", "server", p.Server, "for", p.grantee(), "by", who)
	http.Redirect(w, r, p.AuthURL, http.StatusSeeOther)
}
