package admin_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/console"
)

// TestConsoleSession: the console's pages are served at / without a
// credential, and its session, started with an admin's key, is accepted
// by the API in place of a bearer token, from this origin's page only:
// with the page's token, never on the cookie alone.
func TestConsoleSession(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	send := func(method, path string, hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, r.srv.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if code, body := send("GET", "/"); code != 200 || !strings.Contains(body, `action="/console/login"`) {
		t.Fatalf("GET / without a session: %d\n%s", code, body)
	}
	if code, _ := send("GET", "/console/app.js"); code != 200 {
		t.Errorf("GET /console/app.js: %d", code)
	}
	if code, body := send("GET", "/console/none.js"); code != 404 || !strings.Contains(body, `"status":404`) {
		t.Errorf("an unknown asset: %d %s", code, body)
	}
	if code, _ := send("GET", "/v1/servers"); code != 401 {
		t.Errorf("the API without a session: %d", code)
	}

	// A user key does not log in; an admin's does.
	for key, want := range map[string]int{userKey: 403, adminKey: 200} {
		resp, err := client.PostForm(r.srv.URL+"/console/login", url.Values{"key": {key}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("login with %s: %d, want %d", key, resp.StatusCode, want)
		}
	}
	code, page := send("GET", "/")
	if code != 200 || !strings.Contains(page, `/console/app.js`) || !strings.Contains(page, "operator") {
		t.Fatalf("GET / after login: %d\n%s", code, page)
	}
	m := regexp.MustCompile(`name="mcphost-console-token" content="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no token in the console page:\n%s", page)
	}
	token := m[1]
	if code, body := send("GET", "/v1/servers"); code != 403 || !strings.Contains(body, "console") {
		t.Errorf("GET /v1/servers with the cookie alone: %d %s", code, body)
	}
	if code, body := send("GET", "/v1/servers", "Sec-Fetch-Site", "same-origin", console.TokenHeader, token); code != 200 || !strings.Contains(body, `"cfg"`) {
		t.Errorf("GET /v1/servers with the session: %d %s", code, body)
	}
	if code, body := send("POST", "/v1/servers/cfg/disconnect", "Sec-Fetch-Site", "cross-site", console.TokenHeader, token); code != 403 || !strings.Contains(body, "cross-origin") {
		t.Errorf("a cross-site disconnect: %d %s", code, body)
	}
	if code, body := send("POST", "/v1/servers/cfg/disconnect", "Sec-Fetch-Site", "same-origin"); code != 403 {
		t.Errorf("a same-origin disconnect without the token: %d %s", code, body)
	}
	if code, body := send("POST", "/v1/servers/cfg/disconnect", "Sec-Fetch-Site", "same-origin", console.TokenHeader, token); code != 200 || !strings.Contains(body, `"disconnected"`) {
		t.Errorf("a same-origin disconnect: %d %s", code, body)
	}
	// A bearer credential is judged alone, session or not.
	if code, _ := send("GET", "/v1/servers", "Authorization", "Bearer "+userKey); code != 403 {
		t.Errorf("a user's key beside an admin's session: %d, want 403", code)
	}

	resp, err := client.PostForm(r.srv.URL+"/console/logout", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 { // redirected to the login page
		t.Errorf("logout: %d", resp.StatusCode)
	}
	if code, _ := send("GET", "/v1/servers", "Sec-Fetch-Site", "same-origin", console.TokenHeader, token); code != 401 {
		t.Errorf("the API after logout: %d, want 401", code)
	}
}
