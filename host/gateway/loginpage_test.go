package gateway

import (
	"io"
	"net/http"
	"net/http/cookiejar"
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
