package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/auth"
)

//go:embed static templates
var files embed.FS

var pages = template.Must(template.ParseFS(files, "templates/*.html"))

// Authorize is the admin API's check of a request's Authorization header:
// the caller's identity if it may use the API, else why not.
// host.Host.AuthorizeAdmin is one.
type Authorize func(r *http.Request) (*auth.Identity, *auth.Failure)

// Console is the web console. It serves its pages at / and its assets,
// login and logout under /console/; the pages call the admin API, which
// accepts the console's session in place of a bearer token
// (Authenticate).
type Console struct {
	authorize Authorize
	log       hclog.Logger
	sessions  *sessions
	// csrf refuses state-changing requests another site's page starts;
	// with SameSite=Strict on the cookie, the second of two defences.
	csrf   *http.CrossOriginProtection
	static map[string]asset
	mux    *http.ServeMux
}

// New returns the console of the admin API that authorize guards. A nil
// log discards.
func New(authorize Authorize, log hclog.Logger) *Console {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := &Console{authorize: authorize, log: log, sessions: newSessions(),
		csrf: http.NewCrossOriginProtection(), static: loadStatic()}
	c.mux = http.NewServeMux()
	c.mux.HandleFunc("GET /{$}", c.page)
	c.mux.HandleFunc("POST /console/login", c.login)
	c.mux.HandleFunc("POST /console/logout", c.logout)
	c.mux.HandleFunc("GET /console/{file}", c.asset)
	return c
}

// Owns reports whether the console serves path; the admin API leaves such
// requests to it, unauthenticated (the login page must be reachable).
func Owns(path string) bool {
	return path == "/" || strings.HasPrefix(path, "/console/")
}

// contentSecurityPolicy lets the pages load and call nothing but this
// listener: no inline script, no CDN, no framing.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	c.mux.ServeHTTP(w, r)
}

// Authenticate is the admin API's check of a request that carries the
// console's session cookie: ok is false when it carries none, and the
// API's own check applies. The cookie is never enough: the request must
// come from a page of this origin (Sec-Fetch-Site, which only a browser
// sets and no page can forge) and carry the session's token, which only
// the console's own page holds; reads too, as they show the servers,
// calls and arguments.
func (c *Console) Authenticate(r *http.Request) (id *auth.Identity, f *auth.Failure, ok bool) {
	ck, err := r.Cookie(cookieName(r))
	if err != nil || ck.Value == "" {
		return nil, nil, false
	}
	if err := c.csrf.Check(r); err != nil {
		return nil, &auth.Failure{Status: http.StatusForbidden, Reason: "the console refuses a cross-origin request: " + err.Error()}, true
	}
	if r.Header.Get("Sec-Fetch-Site") != "same-origin" {
		return nil, &auth.Failure{Status: http.StatusForbidden, Reason: "a console session works only from the console's page in a browser; scripts use an API key (Authorization: Bearer)"}, true
	}
	id, token, f := c.check(r.Context(), ck.Value)
	if f != nil {
		return nil, f, true
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(TokenHeader)), []byte(token)) != 1 {
		return nil, &auth.Failure{Status: http.StatusForbidden, Reason: "the console's cookie alone is not a credential: the request lacks its page's token"}, true
	}
	return id, nil, true
}

// check returns the identity and token of a live session, checking its
// credential again; a session whose credential no longer passes ends.
func (c *Console) check(ctx context.Context, sid string) (*auth.Identity, string, *auth.Failure) {
	cred, token, ok := c.sessions.credential(sid)
	if !ok {
		return nil, "", &auth.Failure{Status: http.StatusUnauthorized, Reason: "no console session, or it expired: log in again"}
	}
	id, f := c.authorize(bearer(ctx, cred))
	if f != nil {
		c.sessions.end(sid)
		return nil, "", f
	}
	return id, token, nil
}

// bearer is a request carrying only cred, for Authorize.
func bearer(ctx context.Context, cred string) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+cred)
	return r
}

// page serves the console to a logged-in operator, the login page to
// anyone else.
func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if ck, err := r.Cookie(cookieName(r)); err == nil && ck.Value != "" {
		if id, token, f := c.check(r.Context(), ck.Value); f == nil {
			// The token goes only into this page, which no other origin
			// can read.
			c.render(w, http.StatusOK, "console.html", map[string]string{"Subject": id.Subject, "Token": token})
			return
		}
		http.SetCookie(w, sessionCookie(r, ""))
	}
	c.render(w, http.StatusOK, "login.html", nil)
}

// maxCredential bounds a pasted credential: a key, or a JWT with many
// claims.
const maxCredential = 16 << 10

// login checks a pasted credential as the API would check it as a bearer
// token and, for an admin, starts a session. It is a plain form post, so
// logging in works before any script runs.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	// Also cross-origin protected: another site must not log a browser in
	// as an identity of its choosing.
	if err := c.csrf.Check(r); err != nil {
		c.render(w, http.StatusForbidden, "login.html", map[string]string{"Error": "Refused: the form was not sent from this console."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxCredential)
	cred := strings.TrimSpace(r.PostFormValue("key"))
	cred = strings.TrimSpace(strings.TrimPrefix(cred, "Bearer "))
	if cred == "" {
		c.render(w, http.StatusUnauthorized, "login.html", map[string]string{"Error": "Paste an API key of listen.auth."})
		return
	}
	id, f := c.authorize(bearer(r.Context(), cred))
	if f != nil {
		c.log.Info("console login refused", "status", f.Status, "reason", f.Reason)
		c.render(w, f.Status, "login.html", map[string]string{"Error": loginError(f)})
		return
	}
	c.log.Info("console login", "caller", id.String())
	http.SetCookie(w, sessionCookie(r, c.sessions.create(cred)))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func loginError(f *auth.Failure) string {
	if f.Status == http.StatusForbidden {
		return "This key is not an admin's: " + f.Reason + "."
	}
	return "This key is not one of listen.auth's (" + f.Reason + ")."
}

// logout ends the session, server-side, and clears the cookie. The form
// carries the page's token: another page cannot log the operator out.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if err := c.csrf.Check(r); err != nil {
		http.Error(w, "cross-origin logout refused", http.StatusForbidden)
		return
	}
	if ck, err := r.Cookie(cookieName(r)); err == nil {
		if _, token, ok := c.sessions.credential(ck.Value); ok {
			if subtle.ConstantTimeCompare([]byte(r.PostFormValue("token")), []byte(token)) != 1 {
				http.Error(w, "logout refused: the form lacks its page's token", http.StatusForbidden)
				return
			}
			c.sessions.end(ck.Value)
		}
	}
	http.SetCookie(w, sessionCookie(r, ""))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (c *Console) render(w http.ResponseWriter, status int, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		c.log.Warn("console page", "page", name, "error", err)
	}
}

// asset is one embedded file, with the digest that serves as its ETag.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

func loadStatic() map[string]asset {
	out := map[string]asset{}
	entries, _ := fs.ReadDir(files, "static")
	for _, e := range entries {
		b, _ := fs.ReadFile(files, "static/"+e.Name())
		sum := sha256.Sum256(b)
		out[e.Name()] = asset{body: b, ctype: mime.TypeByExtension(path.Ext(e.Name())),
			etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return out
}

// asset serves the stylesheet, the script and the icon. They are public:
// they hold no data, only what every mcphost binary holds.
func (c *Console) asset(w http.ResponseWriter, r *http.Request) {
	a, ok := c.static[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	// Revalidated each time (a cheap 304): an upgraded mcphost serves its
	// own assets at once.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	if r.Header.Get("If-None-Match") == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(a.body)
}
