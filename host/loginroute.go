package host

import (
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"time"
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
		r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
		if err := r.ParseForm(); err != nil {
			loginPageError(w, http.StatusBadRequest, "Login refused", "The form could not be read: "+err.Error())
			return
		}
	}
	p := h.oauth.Logins.byLoginID(r.FormValue("login"))
	if p == nil {
		loginPageError(w, http.StatusBadRequest, "Login refused", "This link does not belong to a login mcphost is waiting for (wrong or expired). Call the server again for a new link (an administrator: see mcphost status).")
		return
	}
	a := h.authn.Load()
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
			h.log.Info("login page: a credential was refused", "server", p.server, "reason", f.Reason)
			loginPageError(w, http.StatusForbidden, "Login refused", fmt.Sprintf("That is not a credential of this mcphost (%s). You are granting mcphost access to %s for %s: prove who you are with the credential mcphost knows you by.", f.Reason, p.server, p.grantee()))
			return
		case p.subject == "" && !a.IsAdmin(id):
			h.log.Info("login page: the gateway's own login refused to a caller who is no administrator", "server", p.server, "caller", id.String())
			loginPageError(w, http.StatusForbidden, "Login refused", fmt.Sprintf("You are %s, who is no administrator of this mcphost. This login picks the account %s uses for %s: only an administrator (listen.auth.admin_groups) may complete it, here or with: mcphost auth login %s CONFIG.", subjectName(grantSubject(id)), p.grantee(), p.server, p.server))
			return
		case p.subject != "" && !sameCaller(a, id, p.subject):
			h.log.Info("login page: a caller's login refused to someone else", "server", p.server, "for", p.subject, "caller", id.String())
			loginPageError(w, http.StatusForbidden, "Login refused", fmt.Sprintf("This login was issued to mcphost user %s, and you are %s. Each caller completes their own login: call %s through mcphost for your own link.", subjectName(p.subject), subjectName(grantSubject(id)), p.server))
			return
		}
		who = id.String()
	} else if p.subject != "" {
		loginPageError(w, http.StatusForbidden, "Login refused", "This mcphost no longer authenticates its callers: no one can prove this login is theirs.")
		return
	}
	secret := rand.Text()
	if !h.oauth.Logins.prove(p, secret) {
		loginPageError(w, http.StatusBadRequest, "Login refused", "This login ended meanwhile. Call the server again for a new link.")
		return
	}
	http.SetCookie(w, proofCookie(p, secret, max(1, int(time.Until(p.expires).Seconds()))))
	h.log.Info("login page: identity proved, on to the authorization server", "server", p.server, "for", p.grantee(), "by", who)
	http.Redirect(w, r, p.authURL, http.StatusSeeOther)
}
