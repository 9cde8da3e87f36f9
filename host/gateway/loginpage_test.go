package gateway

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
)

// TestLoginPageBinding: a shared server's login link is mcphost's page,
// which says whose access is granted and sends on to the authorization
// server only an administrator, with a cookie bound to that one login
// (HttpOnly, SameSite=Lax, for the login's lifetime). The authorization
// server's link it leads to, opened in another browser, is refused at the
// callback and the login stays open for the administrator.
func TestLoginPageBinding(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	as.SetConsent(authtest.Hold)
	h, base := startCodeHostConfig(t, Config{Listen: listener.Config{Auth: perUserAuth}, Servers: []upstream.ServerConfig{codeServer("p", rs)}}, &Options{Grants: grantsFile(t)})
	link := waitAuthorizing(t, h, "p")
	if !strings.HasPrefix(link, base+upstream.LoginPath+"?login=") {
		t.Fatalf("login link %q", link)
	}
	id := strings.TrimPrefix(link, base+upstream.LoginPath+"?login=")

	noFollow := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(id, credential string) (*http.Response, string) {
		t.Helper()
		resp, err := noFollow.PostForm(base+upstream.LoginPath, url.Values{"login": {id}, "credential": {credential}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}

	resp, err := noFollow.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "You are granting mcphost access to p for every caller of this mcphost") ||
		!strings.Contains(page, `name="credential"`) || resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the login page answered %d %v:\n%s", resp.StatusCode, resp.Header, page)
	}
	if r, _ := noFollow.Get(base + upstream.LoginPath + "?login=nosuch"); r == nil || r.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown login's page answered %v", r)
	}
	for _, tc := range []struct{ id, credential, want string }{
		{id, "not-a-key", "not a credential of this mcphost"},
		{id, "", "not a credential of this mcphost"},
		{id, keyOf("alice"), "no administrator"},
		{"nosuch", rootKey, "does not belong to a login"},
	} {
		resp, page := post(tc.id, tc.credential)
		if resp.StatusCode == http.StatusSeeOther || len(resp.Cookies()) != 0 || !strings.Contains(page, tc.want) {
			t.Errorf("posting %q: %d %v\n%s", tc.credential, resp.StatusCode, resp.Cookies(), page)
		}
		if strings.Contains(page, tc.credential) && tc.credential != "" {
			t.Errorf("the page shows the credential: %s", page)
		}
	}

	resp, _ = post(id, rootKey)
	to := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(to, as.URL+"/authorize?") || len(resp.Cookies()) != 1 {
		t.Fatalf("the administrator's proof answered %d to %q, cookies %v", resp.StatusCode, to, resp.Cookies())
	}
	c := resp.Cookies()[0]
	if c.Name != "mcphost_login_"+id || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/oauth/" || c.MaxAge <= 0 || c.MaxAge > int(upstream.LoginTimeout.Seconds()) || len(c.Value) < 20 {
		t.Errorf("the login's cookie: %+v", c)
	}
	if r, err := http.Get(to); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("the authorization server answered %v %v", r, err)
	}
	held := as.Held()
	if len(held) != 1 {
		t.Fatalf("held %q", held)
	}
	// Another browser: no cookie, or a wrong one.
	for _, cookie := range []string{"", "mcphost_login_" + id + "=guess", "mcphost_login_other=" + c.Value} {
		req, _ := http.NewRequest("GET", held[0], nil)
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		r, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "Login refused") {
			t.Errorf("the callback with cookie %q answered %d: %s", cookie, r.StatusCode, b)
		}
	}
	if n := as.TokenRequests("authorization_code"); n != 0 {
		t.Fatalf("%d code exchanges for refused callbacks", n)
	}
	if st := statusOf(h, "p"); st.State != upstream.StateAuthorizing || st.AuthURL != link {
		t.Fatalf("after refused callbacks: %s %q", st.State, st.AuthURL)
	}
	// The administrator's browser.
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(base)
	jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value, Path: c.Path}})
	r, err := (&http.Client{Jar: jar, Timeout: 10 * time.Second}).Get(held[0])
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || !strings.Contains(string(b), "Authorized") || !strings.Contains(string(b), "every caller") {
		t.Fatalf("the administrator's callback answered %d: %s", r.StatusCode, b)
	}
	if !strings.Contains(r.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("the callback did not clear the login's cookie: %q", r.Header.Get("Set-Cookie"))
	}
	waitConnected(t, h, "p")
}

// FuzzBoundCallback: whatever the query and the cookie, the callback of
// bound logins completes none but the one its state names, and that one
// only with the cookie value of whoever proved they may complete it.
func FuzzBoundCallback(f *testing.F) {
	const s1, s2 = "QMRDQ4LX6BJDUXS5YAZK2K3RZ3", "Z6E3H5M7BVN2C4X8A9QWERTY12"
	const secret = "the-proof-0123456789"
	for _, seed := range []struct {
		query, value string
		own          bool
	}{
		{"state=" + s1 + "&code=abc", secret, true}, {"state=" + s1 + "&code=abc", secret, false},
		{"state=" + s1 + "&code=abc", "", true}, {"state=" + s1 + "&code=abc", secret + "x", true},
		{"state=" + s2 + "&code=abc", secret, true}, {"state=" + s1 + "&error=access_denied", secret, true},
		{"state=" + s1, "\"" + secret + "\"", true},
	} {
		f.Add(seed.query, seed.value, seed.own)
	}
	f.Fuzz(func(t *testing.T, query, value string, own bool) {
		l := &upstream.Logins{Bound: true}
		pending := map[string]*upstream.PendingLogin{}
		for _, s := range []string{s1, s2} {
			p, _, err := l.Expect("srv", "key:bob", "https://as.example/authorize?client_id=c&state="+s, "http://127.0.0.1:7700"+upstream.CallbackPath)
			if err != nil {
				t.Fatal(err)
			}
			p.Finish(nil) // the callback's page does not wait for an exchange
			pending[s] = p
		}
		l.Prove(pending[s1], secret)
		r := httptest.NewRequest(http.MethodGet, "/oauth/callback", nil)
		r.URL.RawQuery = query
		name := "mcphost_login_" + pending[s1].ID
		if !own {
			name = "mcphost_login_" + pending[s2].ID
		}
		r.Header.Set("Cookie", name+"="+value)
		w := httptest.NewRecorder()
		l.ServeHTTP(w, r)
		state := r.URL.Query().Get("state")
		if c, err := r.Cookie(name); err == nil {
			value = c.Value // net/http's reading: surrounding quotes dropped
		}
		for s, p := range pending {
			select {
			case <-p.Done:
				if s != state || s != s1 || !own || value != secret {
					t.Fatalf("query %q, cookie %s=%q completed the login of state %s", query, name, value, s)
				}
			default:
			}
		}
	})
}

// FuzzJWTClaims: any token is read as claims or not at all, without
// panicking; a JWT's payload object always is.
func FuzzJWTClaims(f *testing.F) {
	for _, seed := range []string{"", "a.b.c", "x." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"i","sub":"s"}`)) + ".y",
		"x." + base64.RawURLEncoding.EncodeToString([]byte(`[1]`)) + ".y", "x." + base64.RawURLEncoding.EncodeToString([]byte(`{"a":1}{}`)) + ".y", "...", "opaque-token"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		upstream.JWTClaims(payload)
		sub, _ := json.Marshal(payload)
		tok := "h." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":`+string(sub)+`}`)) + ".s"
		var want string
		if err := json.Unmarshal(sub, &want); err != nil {
			t.Fatal(err)
		}
		c := upstream.JWTClaims(tok)
		if c == nil || c["sub"] != want {
			t.Fatalf("claims of a JWT with sub %q: %v", payload, c)
		}
	})
}
