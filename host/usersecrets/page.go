package usersecrets

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"

	"github.com/mcphost-project/mcphost/host/auth"
)

// The secret page: a link of Needed opens it. GET says whose secret is
// asked for, for which server, and shows a form; POST takes the person's
// credential (the API key, or an access token of the identity provider,
// that listen.auth knows them by) with the values, and stores them only
// when the credential is the caller's the link was issued to: one person
// cannot set another's secret, even holding their link. The link's id is
// random, lasts LinkTimeout, and is forgotten once the secrets are given.

// maxForm bounds the page's form: the credential and the values.
const maxForm = 64 << 10

// valueField is the form field of a secret's value.
func valueField(name string) string { return "value." + name }

// Routes serves the secret page at SecretPath on mux, with the listener's
// authenticator of the moment; a nil Keeper serves nothing.
func (k *Keeper) Routes(mux *http.ServeMux, authn func() *auth.Authenticator) {
	if k == nil {
		return
	}
	page := func(w http.ResponseWriter, r *http.Request) { k.Serve(w, r, authn()) }
	mux.HandleFunc("GET "+SecretPath, page)
	mux.HandleFunc("POST "+SecretPath, page)
}

// Serve is the secret page (SecretPath); a is the listener's
// authenticator, nil when it takes anyone (then no one can prove a link is
// theirs, and nothing is stored).
func (k *Keeper) Serve(w http.ResponseWriter, r *http.Request, a *auth.Authenticator) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			pageError(w, http.StatusBadRequest, "The form could not be read: "+err.Error())
			return
		}
	}
	req := k.byID(r.FormValue("request"))
	if req == nil {
		pageError(w, http.StatusBadRequest, "This link does not belong to a secret mcphost is waiting for (wrong, used or expired). Call the server again for a new link.")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, secretForm(req))
		return
	}
	if a == nil {
		pageError(w, http.StatusForbidden, "This mcphost no longer authenticates its callers: no one can prove this link is theirs.")
		return
	}
	id, f := a.Authenticate(r.Context(), "Bearer "+r.PostFormValue("credential"))
	switch {
	case f != nil:
		k.log.Info("secret page: a credential was refused", "server", req.server, "reason", f.Reason)
		pageError(w, http.StatusForbidden, fmt.Sprintf("That is not a credential of this mcphost (%s). These secrets are for mcphost user %s: prove who you are with the credential mcphost knows you by.", f.Reason, req.subject))
		return
	case id.Subject != req.subject:
		k.log.Info("secret page: a caller's link refused to someone else", "server", req.server, "for", req.subject, "caller", id.String())
		pageError(w, http.StatusForbidden, fmt.Sprintf("This link was issued to mcphost user %s, and you are %s. Each caller gives their own secrets: call %s through mcphost for your own link.", req.subject, id.Subject, req.server))
		return
	}
	values := make([][]byte, len(req.names))
	for i, name := range req.names {
		values[i] = []byte(r.PostFormValue(valueField(name)))
		if err := CheckValue(values[i]); err != nil {
			pageError(w, http.StatusBadRequest, fmt.Sprintf("Secret %s: %v. Go back and enter it again.", name, err))
			return
		}
	}
	for i, name := range req.names {
		if err := k.opts.Set(r.Context(), req.subject, name, values[i]); err != nil {
			k.log.Warn("secret page: storing a caller's secret failed", "server", req.server, "subject", req.subject, "secret", name, "error", err)
			pageError(w, http.StatusInternalServerError, fmt.Sprintf("Secret %s could not be stored: %v", name, err))
			return
		}
	}
	k.complete(req)
	k.log.Info("secret page: a caller gave their secrets", "server", req.server, "subject", req.subject, "secrets", strings.Join(req.names, ","))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, savedPage(req.server))
}

// savedPage is the answer once the secrets are stored: it quotes nothing
// the form carried.
func savedPage(server string) string {
	return page("Secrets saved", fmt.Sprintf("mcphost keeps them for your calls to %s. Go back to your client: a call that waits for them goes on; otherwise call again.", server))
}

// secretForm is the page that asks for the credential and the values.
func secretForm(req *request) string {
	e := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><title>mcphost: your secrets for %s</title><h1>Your secrets for %s</h1>\n", e(req.server), e(req.server))
	fmt.Fprintf(&b, "<p><strong>mcphost user %s: server %s starts your own upstream with these secrets of yours.</strong> mcphost keeps them sealed, and uses them only for your calls. Continue only if you are %s and called %s yourself.</p>\n",
		e(req.subject), e(req.server), e(req.subject), e(req.server))
	b.WriteString(`<form method="post" action="secret">` + "\n")
	fmt.Fprintf(&b, `<input type="hidden" name="request" value="%s">`+"\n", e(req.id))
	b.WriteString(`<p><label>prove who you are with the credential mcphost knows you by (your API key, or an access token of its identity provider): <input type="password" name="credential" autocomplete="off" required></label></p>` + "\n")
	for _, name := range req.names {
		fmt.Fprintf(&b, `<p><label>%s: <input type="password" name="%s" autocomplete="off" required></label></p>`+"\n", e(name), e(valueField(name)))
	}
	b.WriteString(`<p><button type="submit">Save</button></p></form>` + "\n")
	return b.String()
}

func page(title, body string) string {
	return fmt.Sprintf("<!doctype html><title>mcphost: %s</title><h1>%s</h1><p>%s</p>\n", html.EscapeString(title), html.EscapeString(title), html.EscapeString(body))
}

func pageError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, page("Secret refused", body))
}
