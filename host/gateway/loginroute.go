package gateway

import (
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// serveLogin is the login page: GET shows whose access the login grants
// and asks for proof; POST checks it and sends the browser on to the
// authorization server with the login's cookie.
func (h *Host) serveLogin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY") // no click on a page the user does not see
	w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, upstream.MaxLoginForm)
		if err := r.ParseForm(); err != nil {
			upstream.LoginPageError(w, http.StatusBadRequest, "Login refused", "The form could not be read: "+err.Error())
			return
		}
	}
	p := h.oauth.Logins.ByLoginID(r.FormValue("login"))
	if p == nil {
		upstream.LoginPageError(w, http.StatusBadRequest, "Login refused", "This link does not belong to a login mcphost is waiting for (wrong or expired). Call the server again for a new link (an administrator: see mcphost status).")
		return
	}
	a := h.authn.Load()
	if r.Method != http.MethodPost {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, upstream.LoginForm(p, a != nil))
		return
	}
	who := "anyone (this mcphost does not authenticate its callers)"
	if a != nil {
		id, f := a.Authenticate(r.Context(), "Bearer "+r.PostFormValue("credential"))
		switch {
		case f != nil:
			h.log.Info("login page: a credential was refused", "server", p.Server, "reason", f.Reason)
			upstream.LoginPageError(w, http.StatusForbidden, "Login refused", fmt.Sprintf("That is not a credential of this mcphost (%s). You are granting mcphost access to %s for %s: prove who you are with the credential mcphost knows you by.", f.Reason, p.Server, p.Grantee()))
			return
		case p.Subject == "" && !a.IsAdmin(id):
			h.log.Info("login page: the gateway's own login refused to a caller who is no administrator", "server", p.Server, "caller", id.String())
			upstream.LoginPageError(w, http.StatusForbidden, "Login refused", fmt.Sprintf("You are %s, who is no administrator of this mcphost. This login picks the account %s uses for %s: only an administrator (listen.auth.admin_groups) may complete it, here or with: mcphost auth login %s CONFIG.", upstream.SubjectName(upstream.GrantSubject(id)), p.Grantee(), p.Server, p.Server))
			return
		case p.Subject != "" && !upstream.SameCaller(a, id, p.Subject):
			h.log.Info("login page: a caller's login refused to someone else", "server", p.Server, "for", p.Subject, "caller", id.String())
			upstream.LoginPageError(w, http.StatusForbidden, "Login refused", fmt.Sprintf("This login was issued to mcphost user %s, and you are %s. Each caller completes their own login: call %s through mcphost for your own link.", upstream.SubjectName(p.Subject), upstream.SubjectName(upstream.GrantSubject(id)), p.Server))
			return
		}
		who = id.String()
	} else if p.Subject != "" {
		upstream.LoginPageError(w, http.StatusForbidden, "Login refused", "This mcphost no longer authenticates its callers: no one can prove this login is theirs.")
		return
	}
	secret := rand.Text()
	if !h.oauth.Logins.Prove(p, secret) {
		upstream.LoginPageError(w, http.StatusBadRequest, "Login refused", "This login ended meanwhile. Call the server again for a new link.")
		return
	}
	http.SetCookie(w, upstream.ProofCookie(p, secret, max(1, int(time.Until(p.Expires).Seconds()))))
	h.log.Info("login page: identity proved, on to the authorization server", "server", p.Server, "for", p.Grantee(), "by", who)
	http.Redirect(w, r, p.AuthURL, http.StatusSeeOther)
}
