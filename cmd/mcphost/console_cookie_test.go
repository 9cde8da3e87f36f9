package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestConsoleCookieIsNoCredential: the attack of the hardening review, in a
// real browser. An admin logs in to the console; the browser then visits
// another web app on the same host, which receives the console's cookie
// (cookies are not kept apart by port). Replayed from a plain HTTP client,
// alone or with a browser's headers forged, the cookie reads and changes
// nothing: the API wants the token only the console's own page holds. The
// console keeps working, and its logout ends the session for good.
func TestConsoleCookieIsNoCredential(t *testing.T) {
	path := chromium(t)
	mcpAddr, adminAddr := testproc.FreeAddr(t), testproc.FreeAddr(t)
	logs := runMcphost(t, quickstartConsole(t, mcpAddr, adminAddr), adminAddr)
	admin := "http://" + adminAddr

	var mu sync.Mutex
	var stolen string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if c := r.Header.Get("Cookie"); c != "" {
			stolen = c
		}
		mu.Unlock()
		w.Write([]byte("<html><body>another local app</body></html>"))
	}))
	defer other.Close()

	b := newBrowser(t, path, logs)
	b.do("logging in",
		chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), consoleAdminKey), chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS(serverIn("clock", "connected"))))
	token, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.querySelector('meta[name="mcphost-console-token"]') || {}).content || ""`))
	if err != nil {
		t.Fatal(err)
	}
	b.do("visiting another app on this host", chromedp.Navigate(other.URL+"/"), chromedp.WaitVisible(chromedp.CSS("body")))
	mu.Lock()
	cookie := stolen
	mu.Unlock()
	if !strings.Contains(cookie, "mcphost_console") {
		t.Fatalf("the other app got no console cookie (%q): the premise of the attack does not hold here", cookie)
	}

	replay := func(method, path, body string, h map[string]string) int {
		t.Helper()
		req, err := http.NewRequest(method, admin+path, bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	add := `{"name":"planted","command":"` + upstreamBin + `","args":["-name","planted"]}`
	forged := map[string]string{"Origin": admin, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
	for _, tc := range []struct {
		what   string
		method string
		path   string
		body   string
		h      map[string]string
	}{
		{"a read with the cookie alone", "GET", "/v1/servers", "", nil},
		{"an add with the cookie alone", "POST", "/v1/servers", add, nil},
		{"an add with a browser's headers forged", "POST", "/v1/servers", add, forged},
		{"a read with a browser's headers forged", "GET", "/v1/audit", "", forged},
	} {
		if code := replay(tc.method, tc.path, tc.body, tc.h); code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("%s: HTTP %d, want 401 or 403", tc.what, code)
		}
	}

	b.do("the console still works", chromedp.Navigate(admin+"/#servers"),
		chromedp.WaitVisible(chromedp.CSS(serverIn("clock", "connected"))))
	// A definition with two mistakes shows both, each beside its field.
	b.do("a definition with two mistakes",
		chromedp.Click(chromedp.CSS(`button[data-action="add"]`)),
		chromedp.WaitVisible(chromedp.ID("f-name")),
		chromedp.SendKeys(chromedp.ID("f-name"), "bad name!"),
		chromedp.SendKeys(chromedp.ID("f-command"), upstreamBin),
		chromedp.SendKeys(chromedp.ID("f-connect_timeout"), "forever"),
		chromedp.Click(chromedp.CSS(`button[data-action="save"]`)),
		waitText(`.field-error[data-field="name"]`, "name"),
		waitText(`.field-error[data-field="connect_timeout"]`, "forever"))
	if token == "" {
		t.Fatal("the console page holds no token")
	}
	withToken := map[string]string{"Origin": admin, "Sec-Fetch-Site": "same-origin", "X-Mcphost-Console-Token": token}
	if code := replay("GET", "/v1/servers", "", withToken); code != http.StatusOK {
		t.Fatalf("the session with its page's token: HTTP %d, want 200", code)
	}
	b.do("logging out", chromedp.Navigate(admin+"/#servers"), chromedp.WaitVisible(chromedp.CSS("form.who")),
		chromedp.Submit(chromedp.CSS(`form.who`)), chromedp.WaitVisible(chromedp.ID("key")))
	if code := replay("GET", "/v1/servers", "", withToken); code != http.StatusUnauthorized {
		t.Errorf("the session after logout, with its token: HTTP %d, want 401", code)
	}
	if strings.Contains(logs.String(), `"planted"`) || strings.Contains(logs.String(), "server=planted") {
		t.Errorf("the planted server was added:\n%s", logs.String())
	}
}
