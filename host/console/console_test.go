package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/auth"
)

const (
	adminKey = "k-admin"
	userKey  = "k-user"
)

// keys is an Authorize over two keys, one an admin's; revoked keys fail.
type keys struct{ revoked map[string]bool }

func (k *keys) authorize(r *http.Request) (*auth.Identity, *auth.Failure) {
	cred := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case k.revoked[cred]:
		return nil, &auth.Failure{Status: http.StatusUnauthorized, Reason: "invalid bearer token"}
	case cred == adminKey:
		return &auth.Identity{Subject: "operator", Groups: []string{"admins"}, Method: "key"}, nil
	case cred == userKey:
		return &auth.Identity{Subject: "carol", Method: "key"}, &auth.Failure{Status: http.StatusForbidden, Reason: "carol (key) is in none of the admin groups"}
	}
	return nil, &auth.Failure{Status: http.StatusUnauthorized, Reason: "invalid bearer token"}
}

func newConsole(t *testing.T) (*Console, *keys) {
	t.Helper()
	k := &keys{revoked: map[string]bool{}}
	return New(k.authorize, nil), k
}

// login posts key as the login form would from the console's own page.
func login(c *Console, key string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/console/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	return w
}

func sessionOf(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, ck := range w.Result().Cookies() {
		if ck.Name == CookieName || ck.Name == SecureCookieName {
			return ck
		}
	}
	t.Fatalf("no %s cookie in %v", CookieName, w.Header())
	return nil
}

// tokenRE finds the token in the console page.
var tokenRE = regexp.MustCompile(`<meta name="mcphost-console-token" content="([^"]+)">`)

// tokenOf is the token the console page of session ck holds.
func tokenOf(t *testing.T, c *Console, ck *http.Cookie) string {
	t.Helper()
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(ck)
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	m := tokenRE.FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatalf("no token in the console page:\n%s", w.Body)
	}
	return m[1]
}

// fromPage is a request of the console's page in a browser: the session's
// cookie and token, and the browser's Sec-Fetch-Site.
func fromPage(method, target string, ck *http.Cookie, token string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.AddCookie(ck)
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set(TokenHeader, token)
	return r
}

func TestLogin(t *testing.T) {
	t.Parallel()
	c, _ := newConsole(t)
	for _, tc := range []struct {
		name, key string
		status    int
		says      string
	}{
		{"empty", "  ", 401, "Paste an API key"},
		{"unknown key", "k-nobody", 401, "not one of listen.auth"},
		{"not an admin", userKey, 403, "not an admin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := login(c, tc.key)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.says) {
				t.Errorf("status %d, want %d saying %q:\n%s", w.Code, tc.status, tc.says, w.Body)
			}
			if len(w.Result().Cookies()) != 0 {
				t.Errorf("a refused login set cookies: %v", w.Result().Cookies())
			}
		})
	}

	w := login(c, "Bearer "+adminKey+"\n")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
		t.Fatalf("login: %d %v", w.Code, w.Header())
	}
	ck := sessionOf(t, w)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure || ck.MaxAge <= 0 {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP", ck)
	}
	if strings.Contains(ck.Value, adminKey) {
		t.Error("the cookie holds the key")
	}

	// The console page for the session, the login page without one.
	for _, tc := range []struct {
		cookie *http.Cookie
		want   string
	}{{ck, `<span title="logged in as">operator</span>`}, {nil, `action="/console/login"`}, {&http.Cookie{Name: CookieName, Value: "forged"}, `action="/console/login"`}} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.cookie != nil {
			r.AddCookie(tc.cookie)
		}
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		if w.Code != 200 || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("GET / with %v: %d, want %q in\n%s", tc.cookie, w.Code, tc.want, w.Body)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
	}
}

func TestLoginOverTLS(t *testing.T) {
	t.Parallel()
	c, _ := newConsole(t)
	r := httptest.NewRequest("POST", "https://admin.example/console/login", strings.NewReader("key="+adminKey))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	if ck := sessionOf(t, w); !ck.Secure || ck.Name != SecureCookieName || ck.Domain != "" || ck.Path != "/" {
		t.Errorf("cookie over TLS: %+v, want Secure, named %s, no Domain, Path /", ck, SecureCookieName)
	}
}

// TestCrossOrigin: another site's page can neither log a browser in nor
// change anything with its session.
func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	c, _ := newConsole(t)
	r := httptest.NewRequest("POST", "/console/login", strings.NewReader("key="+adminKey))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
		t.Errorf("cross-site login: %d, cookies %v", w.Code, w.Result().Cookies())
	}

	ck := sessionOf(t, login(c, adminKey))
	token := tokenOf(t, c, ck)
	for _, tc := range []struct {
		method string
		hdr    map[string]string
		status int // 0: accepted
	}{
		{"GET", map[string]string{"Sec-Fetch-Site": "same-origin", TokenHeader: token}, 0},
		{"POST", map[string]string{"Sec-Fetch-Site": "same-origin", TokenHeader: token}, 0},
		// The cookie alone, as another app on this host or a script
		// replays it: reads included.
		{"GET", nil, 403},
		{"POST", nil, 403},
		{"GET", map[string]string{"Sec-Fetch-Site": "same-origin"}, 403},
		{"POST", map[string]string{"Sec-Fetch-Site": "same-origin", TokenHeader: token + "x"}, 403},
		// Not from a browser's page of this origin, even with the token.
		{"GET", map[string]string{TokenHeader: token}, 403},
		{"POST", map[string]string{"Origin": "http://example.com", TokenHeader: token}, 403},
		{"GET", map[string]string{"Sec-Fetch-Site": "cross-site", TokenHeader: token}, 403},
		{"POST", map[string]string{"Sec-Fetch-Site": "cross-site", TokenHeader: token}, 403},
		{"DELETE", map[string]string{"Sec-Fetch-Site": "same-site", TokenHeader: token}, 403},
		{"POST", map[string]string{"Origin": "http://evil.example", TokenHeader: token}, 403},
	} {
		r := httptest.NewRequest(tc.method, "/v1/servers/x", nil)
		r.AddCookie(ck)
		for k, v := range tc.hdr {
			r.Header.Set(k, v)
		}
		id, f, ok := c.Authenticate(r)
		switch {
		case !ok:
			t.Errorf("%s %v: the session cookie was not seen", tc.method, tc.hdr)
		case tc.status == 0 && (f != nil || id.Subject != "operator"):
			t.Errorf("%s %v: refused: %v", tc.method, tc.hdr, f)
		case tc.status != 0 && (f == nil || f.Status != tc.status):
			t.Errorf("%s %v: %v, want %d", tc.method, tc.hdr, f, tc.status)
		}
	}
}

// TestSessionEnds: logout, a revoked key and idleness each end a session.
func TestSessionEnds(t *testing.T) {
	t.Parallel()
	c, k := newConsole(t)
	var token string
	api := func(ck *http.Cookie) *auth.Failure {
		_, f, ok := c.Authenticate(fromPage("GET", "/v1/servers", ck, token))
		if !ok {
			t.Fatal("cookie not seen")
		}
		return f
	}
	r := httptest.NewRequest("GET", "/v1/servers", nil)
	if _, _, ok := c.Authenticate(r); ok {
		t.Error("a request without the cookie is the console's")
	}

	ck := sessionOf(t, login(c, adminKey))
	token = tokenOf(t, c, ck)
	if f := api(ck); f != nil {
		t.Fatal(f)
	}
	logout := func(formToken string) *httptest.ResponseRecorder {
		lr := httptest.NewRequest("POST", "/console/logout", strings.NewReader(url.Values{"token": {formToken}}.Encode()))
		lr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		lr.Header.Set("Sec-Fetch-Site", "same-origin")
		lr.AddCookie(ck)
		w := httptest.NewRecorder()
		c.ServeHTTP(w, lr)
		return w
	}
	if w := logout("not-the-token"); w.Code != http.StatusForbidden {
		t.Errorf("a logout without the page's token: %d, want 403", w.Code)
	}
	if f := api(ck); f != nil {
		t.Errorf("a refused logout ended the session: %v", f)
	}
	w := logout(token)
	if cleared := sessionOf(t, w); w.Code != http.StatusSeeOther || cleared.MaxAge >= 0 || cleared.Value != "" {
		t.Errorf("logout: %d, cookie %+v", w.Code, cleared)
	}
	if f := api(ck); f == nil || f.Status != 401 {
		t.Errorf("after logout: %v, want 401", f)
	}

	ck = sessionOf(t, login(c, adminKey))
	token = tokenOf(t, c, ck)
	k.revoked[adminKey] = true
	if f := api(ck); f == nil || f.Status != 401 {
		t.Errorf("revoked key: %v, want 401", f)
	}
	k.revoked[adminKey] = false
	if f := api(ck); f == nil {
		t.Error("a session whose key failed once lived on")
	}

	now := time.Now()
	c.sessions.now = func() time.Time { return now }
	ck = sessionOf(t, login(c, adminKey))
	token = tokenOf(t, c, ck)
	now = now.Add(IdleTimeout - time.Minute)
	if f := api(ck); f != nil {
		t.Errorf("in use within the idle timeout: %v", f)
	}
	for range 10 { // in use, until the end of its lifetime
		now = now.Add(MaxLifetime / 10)
		api(ck)
	}
	if f := api(ck); f == nil {
		t.Error("a session outlived MaxLifetime")
	}
	ck = sessionOf(t, login(c, adminKey))
	token = tokenOf(t, c, ck)
	now = now.Add(IdleTimeout + time.Second)
	if f := api(ck); f == nil {
		t.Error("an idle session lived on")
	}
}

func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	s := newSessions()
	first := s.create("a")
	for range maxSessions {
		s.create("b")
	}
	if len(s.m) != maxSessions {
		t.Errorf("%d sessions, want at most %d", len(s.m), maxSessions)
	}
	if _, _, ok := s.credential(first); ok {
		t.Error("the oldest session was kept")
	}
}

func TestAssets(t *testing.T) {
	t.Parallel()
	c, _ := newConsole(t)
	for _, name := range []string{"app.js", "servers.js", "pages.js", "users.js", "calls.js", "console.css", "icon.svg"} {
		w := httptest.NewRecorder()
		c.ServeHTTP(w, httptest.NewRequest("GET", "/console/"+name, nil))
		if w.Code != 200 || w.Body.Len() == 0 || w.Header().Get("ETag") == "" || w.Header().Get("Content-Type") == "" {
			t.Errorf("%s: %d %v", name, w.Code, w.Header())
			continue
		}
		r := httptest.NewRequest("GET", "/console/"+name, nil)
		r.Header.Set("If-None-Match", w.Header().Get("ETag"))
		w2 := httptest.NewRecorder()
		c.ServeHTTP(w2, r)
		if w2.Code != http.StatusNotModified {
			t.Errorf("%s again with its ETag: %d, want 304", name, w2.Code)
		}
	}
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "/console/nothing.js", nil))
	if w.Code != 404 {
		t.Errorf("an unknown asset: %d", w.Code)
	}
}

// TestNothingExternal: the pages load nothing from another origin (the
// CSP would block it; this finds it before a browser does).
func TestNothingExternal(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"static", "templates"} {
		entries, err := files.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, _ := files.ReadFile(dir + "/" + e.Name())
			for _, bad := range []string{"http://", "https://", "//cdn", "innerHTML", "eval("} {
				if strings.Contains(string(b), bad) && !(e.Name() == "icon.svg" && bad == "http://") {
					t.Errorf("%s/%s holds %q", dir, e.Name(), bad)
				}
			}
		}
	}
}
