package security

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/internal/authtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Upstream OAuth logins through `mcphost run`: a login link must be
// finished by the identity it was issued to (per_user), and the gateway's
// own login (shared) only by an administrator. The authorization server is
// authtest's, whose "signed-in user" is SetUser: the browser of whoever
// opens the link.

const (
	aliceKey = "alice-key-0123456789abcdef"
	bobKey   = "bob-key-0123456789abcdef"
	rootKey  = "root-key-0123456789abcdef"
)

// protectedUpstream is a real MCP server behind OAuth on loopback:
// mcphost's resource-server middleware trusting as, in front of a go-sdk
// server whose tool hello says whose token the call carried.
func protectedUpstream(t *testing.T, as *authtest.Server) string {
	t.Helper()
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	u := hs.URL + "/mcp"
	a, err := auth.New(auth.Config{OAuth: &auth.OAuth{Issuer: as.URL, Audience: u, Scopes: []string{"mcp:tools"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + auth.FromContext(ctx).String()}}}, nil, nil
	})
	mux.Handle("/", a.Middleware(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	return u
}

// loginConfig is a config with API keys for alice, bob and root (an
// admin), extra inside listen.auth, and server "p" in front of upstream
// with oauth mode.
func loginConfig(t *testing.T, addr, upstream, mode, extra string) string {
	return writeConfig(t, "", fmt.Sprintf(`
listen {
  http = %q
  auth {
    key "alice" {
      value   = %q
      subject = "alice"
    }
    key "bob" {
      value   = %q
      subject = "bob"
    }
    key "root" {
      value   = %q
      subject = "root"
      groups  = ["admins"]
    }
%s
  }
}
server "p" {
  transport = "streamable-http"
  url       = %q
  oauth {
    mode = %q
  }
}
`, addr, aliceKey, bobKey, rootKey, extra, upstream, mode))
}

// bearerRT adds a bearer token to each request.
type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// callHello calls p__hello through s with credential: its text and isError.
func callHello(t *testing.T, s *server, credential string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{credential}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "p__hello"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// statusLink waits for /status (read with the admin's key) to show p's
// login link, and returns it.
func statusLink(t *testing.T, s *server) string {
	t.Helper()
	link := ""
	testproc.WaitFor(t, "status to show p's login link", 20*time.Second, func() bool {
		req, _ := http.NewRequest("GET", s.URL+"/status", nil)
		req.Header.Set("Authorization", "Bearer "+rootKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var doc struct {
			Servers []struct {
				Name    string `json:"name"`
				State   string `json:"state"`
				AuthURL string `json:"authUrl"`
			} `json:"servers"`
		}
		if json.NewDecoder(resp.Body).Decode(&doc) != nil {
			return false
		}
		for _, st := range doc.Servers {
			if st.Name == "p" && st.AuthURL != "" {
				link = st.AuthURL
			}
		}
		return link != ""
	})
	return link
}

// waitState waits for /status to show p in state.
func waitState(t *testing.T, s *server, state string) {
	t.Helper()
	testproc.WaitFor(t, "p to be "+state, 20*time.Second, func() bool {
		req, _ := http.NewRequest("GET", s.URL+"/status", nil)
		req.Header.Set("Authorization", "Bearer "+rootKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"name":"p"`) && strings.Contains(string(b), `"state":"`+state+`"`)
	})
}

// aBrowser is one person's browser: it keeps its cookies and follows
// redirects. open opens a login link; on a mcphost login page it enters
// credential in its form and submits it (a link that is the authorization
// server's own goes straight there).
type aBrowser struct{ c *http.Client }

func newBrowser(t *testing.T) *aBrowser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &aBrowser{c: &http.Client{Jar: jar, Timeout: 20 * time.Second}}
}

var loginField = regexp.MustCompile(`name="login" value="([^"]+)"`)

// open returns the last page's status and text, and the text of the
// mcphost login page it passed ("" if none).
func (b *aBrowser) open(t *testing.T, link, credential string) (code int, page, loginPage string) {
	t.Helper()
	resp, err := b.c.Get(link)
	if err != nil {
		t.Fatalf("opening %s: %v", link, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginField.FindStringSubmatch(string(body))
	if resp.Request.URL.Path != "/oauth/login" || m == nil {
		return resp.StatusCode, string(body), ""
	}
	loginPage = string(body)
	form := url.Values{"login": {m[1]}, "credential": {credential}}
	resp, err = b.c.PostForm(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+"/oauth/login", form)
	if err != nil {
		t.Fatalf("submitting the login page: %v", err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body), loginPage
}

var anyLink = regexp.MustCompile(`https?://[^\s,]+`)

// TestLoginLinkBoundToCaller: bob's per_user login link, opened by alice
// signed in as herself at the authorization server, must not give bob's
// calls her account: the link's page wants bob's own credential, and the
// authorization server's link it leads to completes only in the browser
// that proved it (a cookie bound to that login). Bob then finishes his
// own login, and his calls run as him.
func TestLoginLinkBoundToCaller(t *testing.T) {
	as := authtest.New(t)
	up := protectedUpstream(t, as)
	addr := testproc.FreeAddr(t)
	s := launch(t, cmdRun(loginConfig(t, addr, up, "per_user", "")), addr)

	// The gateway's own login (it lists p's tools), by the admin.
	as.SetUser("operator")
	if code, page, _ := newBrowser(t).open(t, statusLink(t, s), rootKey); code != http.StatusOK || !strings.Contains(page, "Authorized") {
		t.Fatalf("the admin's login answered %d: %s", code, page)
	}
	waitState(t, s, "connected")

	got, isErr := callHello(t, s, bobKey)
	link := anyLink.FindString(got)
	if !isErr || link == "" {
		t.Fatalf("bob's first call = %q", got)
	}

	// Alice opens bob's link and signs in as herself.
	as.SetUser("alice")
	code, page, loginPage := newBrowser(t).open(t, link, aliceKey)
	if got, _ := callHello(t, s, bobKey); strings.Contains(got, "alice") {
		t.Fatalf("bob's call ran with alice's account: %q (alice's browser got %d: %s)", got, code, page)
	}
	if code != http.StatusForbidden || !strings.Contains(page, "issued to") {
		t.Errorf("alice's proof on bob's login page answered %d: %s", code, page)
	}
	if !strings.Contains(loginPage, "You are granting mcphost access to p for mcphost user bob") {
		t.Errorf("the login page does not say whose access is granted:\n%s", loginPage)
	}

	// Bob proves he is bob, but hands alice the authorization server's
	// link it led to: her browser has no proof, and the callback refuses.
	bob := newBrowser(t)
	bob.c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := bob.c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginField.FindStringSubmatch(string(body))
	if m == nil {
		t.Fatalf("bob's link is no login page: %s", body)
	}
	resp, err = bob.c.PostForm(s.URL+"/oauth/login", url.Values{"login": {m[1]}, "credential": {bobKey}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	asLink := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(asLink, as.URL+"/authorize?") {
		t.Fatalf("bob's proof answered %d, Location %q", resp.StatusCode, asLink)
	}
	code, page, _ = newBrowser(t).open(t, asLink, "")
	if code != http.StatusForbidden || !strings.Contains(page, "Login refused") {
		t.Errorf("alice's callback without bob's proof answered %d: %s", code, page)
	}
	if got, _ := callHello(t, s, bobKey); strings.Contains(got, "alice") {
		t.Fatalf("bob's call ran with alice's account: %q", got)
	}

	// Bob, in his own browser, with his own account: his calls are his.
	as.SetUser("bob")
	got, _ = callHello(t, s, bobKey)
	link = anyLink.FindString(got)
	if code, page, _ := newBrowser(t).open(t, link, bobKey); code != http.StatusOK || !strings.Contains(page, "Authorized") || !strings.Contains(page, "mcphost user bob") {
		t.Fatalf("bob's own login answered %d: %s", code, page)
	}
	if got, isErr := callHello(t, s, bobKey); isErr || got != "hello bob (oauth)" {
		t.Fatalf("bob's call after his login = %q", got)
	}
	if strings.Contains(s.stderr.String(), "eyJ") {
		t.Error("a token reached the log")
	}
}

// TestLoginSubjectMatchesCaller: when the upstream's authorization server
// is the one listen.auth trusts, a caller's grant must be for the
// caller's own subject: carol (a token of that issuer) proves who she is,
// but her browser is signed in as alice there; the login is refused.
func TestLoginSubjectMatchesCaller(t *testing.T) {
	as := authtest.New(t)
	up := protectedUpstream(t, as)
	addr := testproc.FreeAddr(t)
	gateway := "http://" + addr + "/mcp"
	s := launch(t, cmdRun(loginConfig(t, addr, up, "per_user", fmt.Sprintf(`
    oauth {
      issuer   = %q
      audience = %q
    }
`, as.URL, gateway))), addr)
	carol := as.Token(t, "carol", gateway, nil)

	as.SetUser("operator")
	if code, page, _ := newBrowser(t).open(t, statusLink(t, s), rootKey); code != http.StatusOK || !strings.Contains(page, "Authorized") {
		t.Fatalf("the admin's login answered %d: %s", code, page)
	}
	waitState(t, s, "connected")

	got, _ := callHello(t, s, carol)
	link := anyLink.FindString(got)
	if link == "" {
		t.Fatalf("carol's first call = %q", got)
	}
	as.SetUser("alice")
	code, page, _ := newBrowser(t).open(t, link, carol)
	if got, _ := callHello(t, s, carol); strings.Contains(got, "alice") {
		t.Fatalf("carol's call ran with alice's account: %q", got)
	}
	if code == http.StatusOK || !strings.Contains(page, "not carol") {
		t.Errorf("carol's login as alice answered %d: %s", code, page)
	}

	as.SetUser("carol")
	got, _ = callHello(t, s, carol)
	if code, page, _ := newBrowser(t).open(t, anyLink.FindString(got), carol); code != http.StatusOK || !strings.Contains(page, "Authorized") {
		t.Fatalf("carol's own login answered %d: %s", code, page)
	}
	if got, isErr := callHello(t, s, carol); isErr || got != "hello carol (oauth)" {
		t.Fatalf("carol's call after her login = %q", got)
	}
}

// TestSharedLoginAdminOnly: a shared server's login decides the account
// every caller uses upstream: a caller who is no admin is not shown its
// link, cannot complete it, and is told an operator must log in; the admin
// completes it.
func TestSharedLoginAdminOnly(t *testing.T) {
	as := authtest.New(t)
	up := protectedUpstream(t, as)
	addr := testproc.FreeAddr(t)
	s := launch(t, cmdRun(loginConfig(t, addr, up, "shared", "")), addr)
	link := statusLink(t, s)

	got, isErr := callHello(t, s, aliceKey)
	if !isErr || anyLink.MatchString(got) || !strings.Contains(got, "mcphost auth login p CONFIG") {
		t.Errorf("a caller who is no admin got %q", got)
	}
	if l := anyLink.FindString(got); l != "" {
		as.SetUser("alice")
		if code, page, _ := newBrowser(t).open(t, l, aliceKey); code == http.StatusOK && strings.Contains(page, "Authorized") {
			waitState(t, s, "connected")
			got, _ := callHello(t, s, bobKey)
			t.Fatalf("a caller who is no admin chose p's account for every caller: bob's call = %q", got)
		}
	}
	// The link reached her anyway (over an admin's shoulder).
	as.SetUser("alice")
	code, page, loginPage := newBrowser(t).open(t, link, aliceKey)
	if got, _ := callHello(t, s, aliceKey); strings.HasPrefix(got, "hello ") {
		t.Fatalf("a caller who is no admin chose p's account: %q (her browser got %d: %s)", got, code, page)
	}
	if code != http.StatusForbidden || !strings.Contains(page, "administrator") {
		t.Errorf("alice's proof on the shared login page answered %d: %s", code, page)
	}
	if !strings.Contains(loginPage, "every caller") {
		t.Errorf("the shared login page does not say whose access is granted:\n%s", loginPage)
	}

	as.SetUser("operator")
	if code, page, _ := newBrowser(t).open(t, link, rootKey); code != http.StatusOK || !strings.Contains(page, "Authorized") {
		t.Fatalf("the admin's login answered %d: %s", code, page)
	}
	waitState(t, s, "connected")
	if got, isErr := callHello(t, s, aliceKey); isErr || got != "hello operator (oauth)" {
		t.Fatalf("alice's call after the admin's login = %q", got)
	}
}

// cmdRun is `mcphost run CONFIG --no-watch` (the config names listen.http).
func cmdRun(config string) *exec.Cmd {
	return exec.Command(mcphostBin, "run", config, "--no-watch", "--log-level", "debug")
}
