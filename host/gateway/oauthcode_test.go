package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/grants"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// The authorization code login (oauthcode.go, login.go) against real
// servers on loopback: an authorization server (authtest), MCP servers
// behind mcphost's own resource-server middleware (host/auth), and a
// "browser" that follows the login link's redirects to the callback.

// resource is a real MCP server behind OAuth: mcphost's resource-server
// middleware trusting as, for the audience URL, requiring mcp:tools, in
// front of a go-sdk server with the tools whoami and secret.
type resource struct {
	URL  string
	meta string // its protected resource metadata URL
	as   *authtest.Server
	// stepUp, when set, is a scope tools/call of "secret" needs besides
	// mcp:tools: a token without it gets 403 insufficient_scope.
	stepUp string

	unauthorized atomic.Int32 // 401s answered
	forbidden    atomic.Int32 // 403s answered
}

func newResource(t *testing.T, as *authtest.Server, stepUp string) *resource {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rs := &resource{URL: "http://" + ln.Addr().String() + "/mcp", as: as, stepUp: stepUp}
	rs.meta = "http://" + ln.Addr().String() + auth.MetadataPath + "/mcp"
	a, err := auth.New(auth.Config{OAuth: &auth.OAuth{Issuer: as.URL, Audience: rs.URL, Scopes: []string{"mcp:tools"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says who the token names, and which token it is."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		c := tokenClaims(req.Extra.Header.Get("Authorization"))
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s jti=%v scope=%v", auth.FromContext(ctx), c["jti"], c["scope"])}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "secret", Description: "Needs the step-up scope."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "classified"}}}, nil, nil
	})
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewUnstartedServer(rs.count(rs.revocation(a.Middleware(rs.stepUpCheck(inner)))))
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	return rs
}

// count counts the 401 and 403 answers.
func (rs *resource) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&statusWriter{ResponseWriter: w, rs: rs}, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	rs *resource
}

func (w *statusWriter) WriteHeader(code int) {
	switch code {
	case http.StatusUnauthorized:
		w.rs.unauthorized.Add(1)
	case http.StatusForbidden:
		w.rs.forbidden.Add(1)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// revocation refuses the access tokens as revoked, as a resource server
// that introspects would.
func (rs *resource) revocation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && rs.as.Revoked(tok) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, error="invalid_token"`, rs.meta))
			http.Error(w, "the access token was revoked", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// stepUpCheck answers 403 insufficient_scope to a tools/call of "secret"
// whose token lacks rs.stepUp (the middleware before it has verified the
// token; its claims are read here without checking again). The challenge
// names that scope only: the client must keep the ones it has.
func (rs *resource) stepUpCheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rs.stepUp == "" || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		scope, _ := tokenClaims(r.Header.Get("Authorization"))["scope"].(string)
		if msg.Method == "tools/call" && msg.Params.Name == "secret" && !slices.Contains(strings.Fields(scope), rs.stepUp) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, error="insufficient_scope", scope=%q`, rs.meta, rs.stepUp))
			http.Error(w, "secret needs "+rs.stepUp, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tokenClaims are the claims of a bearer JWT, unverified.
func tokenClaims(header string) map[string]any {
	tok, _ := strings.CutPrefix(header, "Bearer ")
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	return c
}

// codeServer is a server that logs in to rs (no grant, mode shared).
func codeServer(name string, rs *resource) upstream.ServerConfig {
	return upstream.ServerConfig{Name: name, Transport: upstream.TransportStreamableHTTP, URL: rs.URL, OAuth: &upstream.UpstreamOAuth{}}
}

// startCodeHost starts a host whose Handler is served on loopback at the
// address its listen.http names, so that its default redirect URL, its own
// /oauth/callback, is where the browser comes back. It returns the host
// and its base URL.
func startCodeHost(t *testing.T, servers []upstream.ServerConfig, opts *Options) (*Host, string) {
	return startCodeHostConfig(t, Config{Servers: servers}, opts)
}

// startCodeHostConfig is startCodeHost for a whole config, whose
// listen.http it sets.
func startCodeHostConfig(t *testing.T, cfg Config, opts *Options) (*Host, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	cfg.Listen.HTTP = ln.Addr().String()
	h, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	// Served before Start: with WaitLogins, Start waits for the callback.
	hs := httptest.NewUnstartedServer(h.Handler())
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return h, hs.URL
}

// browser follows redirects, as a user's browser does from the login link
// (mcphost's login page, whose form it submits) to the authorization
// server (which, as authtest, "clicks allow" at once) and back to the
// callback; it keeps cookies, as the login page's proof needs.
var browser = func() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		panic(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Jar: jar}
}()

// rootKey is the administrator's key of perUserAuth; a host that does not
// authenticate asks for none.
const rootKey = "root-key-0123456789"

// open opens link as the administrator and returns the final page's
// status and text.
func open(link string) (int, string, error) { return openAs(link, rootKey) }

// openAs opens link as whoever credential proves to be: on mcphost's
// login page it submits the form with it.
func openAs(link, credential string) (int, string, error) {
	resp, err := browser.Get(link)
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.Request.URL.Path != upstream.LoginPath || resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(b), err
	}
	at := resp.Request.URL
	resp, err = browser.PostForm(at.Scheme+"://"+at.Host+upstream.LoginPath, url.Values{"login": {at.Query().Get("login")}, "credential": {credential}})
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err = io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// click is open, in the test's goroutine.
func click(t *testing.T, link string) (int, string) {
	t.Helper()
	code, page, err := open(link)
	if err != nil {
		t.Fatalf("opening %s: %v", link, err)
	}
	return code, page
}

func statusOf(h *Host, name string) upstream.Status {
	for _, st := range h.Statuses() {
		if st.Name == name {
			return st
		}
	}
	return upstream.Status{}
}

// waitAuthorizing waits for the server's login link and returns it.
func waitAuthorizing(t *testing.T, h *Host, name string) string {
	t.Helper()
	testproc.WaitFor(t, name+" to show a login link", 15*time.Second, func() bool {
		st := statusOf(h, name)
		return st.State == upstream.StateAuthorizing && st.AuthURL != ""
	})
	return statusOf(h, name).AuthURL
}

func waitConnected(t *testing.T, h *Host, name string) {
	t.Helper()
	testproc.WaitFor(t, name+" to connect", 20*time.Second, func() bool { return statusOf(h, name).State == upstream.StateConnected })
}

// login clicks the server's login link and waits for it to connect.
func login(t *testing.T, h *Host, name string) {
	t.Helper()
	link := waitAuthorizing(t, h, name)
	if code, page := click(t, link); code != http.StatusOK || !strings.Contains(page, "Authorized") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
	waitConnected(t, h, name)
}

// call calls a tool through the host's Go API: its text, and whether it
// is an error (a Go error counts as one).
func call(t *testing.T, h *Host, tool string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.CallTool(ctx, abi.Caller{}, tool, nil)
	if err != nil {
		return err.Error(), true
	}
	return text(t, res), res.IsError
}

func grantsFile(t *testing.T) *grants.File {
	t.Helper()
	f, err := grants.NewFile(filepath.Join(t.TempDir(), "grants.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func storedGrant(t *testing.T, s grants.Store, server string) *grants.Grant {
	t.Helper()
	g, err := s.Get(context.Background(), server, "")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// loginServer serves a Logins at /oauth/callback on loopback, as
// `mcphost auth login` does: it returns them and the redirect URL.
func loginServer(t *testing.T) (*upstream.Logins, string) {
	l := &upstream.Logins{}
	mux := http.NewServeMux()
	mux.Handle("GET "+upstream.CallbackPath, l)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return l, hs.URL + upstream.CallbackPath
}

// TestOAuthLogin: the foreground login of `mcphost auth login` stores a
// grant, registering the client dynamically when the oauth block names no
// client_id and using the one it names otherwise; a host started later
// with the same grants connects without a login.
func TestOAuthLogin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clientID string
	}{
		{"dynamic registration", ""},
		{"preregistered client", "mcphost-pre"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := authtest.New(t)
			rs := newResource(t, as, "")
			logins, redirect := loginServer(t)
			cfg := codeServer("p", rs)
			if tc.clientID != "" {
				as.AddClient(tc.clientID, authtest.Client{RedirectURIs: []string{redirect}})
				cfg.OAuth.ClientID, cfg.OAuth.RedirectURL = tc.clientID, redirect
			}
			store := grantsFile(t)
			var links []string
			var browser sync.WaitGroup
			opts := upstream.LoginOptions{Grants: store, Logins: logins, Redirect: redirect, Logger: testLogger(t),
				// The browser, which the announcement starts; the callback
				// page shows once the login completed.
				Announce: func(server, link string) {
					links = append(links, link)
					browser.Go(func() {
						if code, page, err := open(link); code != http.StatusOK || !strings.Contains(page, "Authorized") {
							t.Errorf("callback answered %d (%v): %s", code, err, page)
						}
					})
				}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			n, err := upstream.Login(ctx, cfg, opts)
			browser.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if n != 2 || len(links) != 1 {
				t.Fatalf("Login = %d tools after %d links, want 2 after 1", n, len(links))
			}
			g := storedGrant(t, store, "p")
			if g == nil || g.AccessToken == "" || g.RefreshToken == "" || !slices.Contains(g.Scopes, "mcp:tools") {
				t.Fatalf("stored grant %+v", g)
			}
			wantRegs := 1
			if tc.clientID != "" {
				wantRegs = 0
				if g.ClientID != tc.clientID {
					t.Errorf("grant for client %q, want %q", g.ClientID, tc.clientID)
				}
			} else if _, ok := as.Client(g.ClientID); !ok {
				t.Errorf("grant for client %q, which the authorization server did not register", g.ClientID)
			}
			if got := as.Registrations(); got != wantRegs {
				t.Errorf("%d registrations, want %d", got, wantRegs)
			}
			q := as.LastAuthorization()
			if q.Get("resource") != rs.URL || q.Get("code_challenge_method") != "S256" || q.Get("redirect_uri") != redirect {
				t.Errorf("authorization request %v", q)
			}

			// mcphost run, later: the stored grant is used.
			h := startHost(t, Config{Servers: []upstream.ServerConfig{cfg}}, &Options{Grants: store})
			if st := statusOf(h, "p"); st.State != upstream.StateConnected {
				t.Fatalf("with the stored grant: %s (%s)", st.State, st.Error)
			}
			if got, isErr := call(t, h, "p__whoami"); isErr || !strings.Contains(got, authtest.DefaultUser) {
				t.Fatalf("p__whoami = %q", got)
			}
			if as.Authorizations() != 1 || as.TokenRequests("authorization_code") != 1 {
				t.Errorf("%d authorizations, %d code exchanges; want 1 each", as.Authorizations(), as.TokenRequests("authorization_code"))
			}
		})
	}
}

// TestOAuthLoginThroughHost: a server with no grant shows its login link in
// the status; a call fails at once, naming it; the browser follows it to
// the host's own /oauth/callback, the server connects, calls work and the
// grant is stored. A new host with the same grants connects without a
// login.
func TestOAuthLoginThroughHost(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	store := grantsFile(t)
	h, base := startCodeHost(t, []upstream.ServerConfig{codeServer("p", rs)}, &Options{Grants: store})

	link := waitAuthorizing(t, h, "p")
	if !strings.HasPrefix(link, base+upstream.LoginPath+"?login=") {
		t.Fatalf("login link %q, want the host's own login page", link)
	}
	start := time.Now()
	got, isErr := call(t, h, "p__whoami")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a call waited %s for a login", took)
	}
	if !isErr {
		t.Fatalf("call before the login = %q", got)
	}
	// A server that never connected has no tools in the catalog yet: a
	// call by a name with its prefix hears that an operator must log in,
	// not "unknown tool"; the link, which picks every caller's account,
	// is for administrators only.
	if strings.Contains(got, link) || !strings.Contains(got, "mcphost auth login p CONFIG") {
		t.Errorf("call before the login failed with %q, want an operator's login asked for, without the link", got)
	}
	t.Logf("a call before the first login: %s", got)

	if code, page := click(t, link); code != http.StatusOK || !strings.Contains(page, "Authorized") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
	if q := as.LastAuthorization(); q.Get("redirect_uri") != base+upstream.CallbackPath {
		t.Fatalf("redirect_uri %q, want the host's own callback %q", q.Get("redirect_uri"), base+upstream.CallbackPath)
	}
	waitConnected(t, h, "p")
	if got, isErr := call(t, h, "p__whoami"); isErr || !strings.Contains(got, authtest.DefaultUser) {
		t.Fatalf("p__whoami after the login = %q", got)
	}
	g := storedGrant(t, store, "p")
	if g == nil || g.RefreshToken == "" {
		t.Fatalf("stored grant %+v", g)
	}
	if as.Registrations() != 1 || as.Authorizations() != 1 {
		t.Errorf("%d registrations, %d authorizations; want 1 each", as.Registrations(), as.Authorizations())
	}
	h.Close()

	// A restart: the grant is used, with no login and no registration.
	h2 := startHost(t, Config{Servers: []upstream.ServerConfig{codeServer("p", rs)}}, &Options{Grants: store})
	if st := statusOf(h2, "p"); st.State != upstream.StateConnected {
		t.Fatalf("after a restart: %s (%s)", st.State, st.Error)
	}
	if got, isErr := call(t, h2, "p__whoami"); isErr || !strings.Contains(got, authtest.DefaultUser) {
		t.Fatalf("p__whoami after a restart = %q", got)
	}
	if as.Registrations() != 1 || as.Authorizations() != 1 {
		t.Errorf("after a restart: %d registrations, %d authorizations; want 1 each", as.Registrations(), as.Authorizations())
	}
}

// jtiOf is the token id whoami reports.
func jtiOf(t *testing.T, h *Host, server string) string {
	t.Helper()
	got, isErr := call(t, h, server+"__whoami")
	if isErr {
		t.Fatalf("%s__whoami = %q", server, got)
	}
	_, jti, _ := strings.Cut(got, "jti=")
	jti, _, _ = strings.Cut(jti, " ")
	return jti
}

// TestOAuthRefresh: a token about to expire is refreshed before it is
// sent (the server never refuses it), and a token the server refuses is
// refreshed once, however many calls were refused at once; neither asks
// for a new login.
func TestOAuthRefresh(t *testing.T) {
	as := authtest.New(t)
	// golang.org/x/oauth2 counts a token as expired 10 s before its expiry.
	as.SetAccessTokenLifetime(12 * time.Second)
	rs := newResource(t, as, "")
	store := grantsFile(t)
	h, _ := startCodeHost(t, []upstream.ServerConfig{codeServer("p", rs)}, &Options{Grants: store})
	login(t, h, "p")
	as.SetAccessTokenLifetime(time.Hour)
	refused := rs.unauthorized.Load()

	first := jtiOf(t, h, "p")
	testproc.WaitFor(t, "a refreshed token", 15*time.Second, func() bool {
		time.Sleep(200 * time.Millisecond)
		return jtiOf(t, h, "p") != first
	})
	if n := as.TokenRequests("refresh_token"); n < 1 {
		t.Fatalf("%d refresh requests", n)
	}
	if n := rs.unauthorized.Load(); n != refused {
		t.Errorf("the server refused %d requests: the token was not refreshed before it expired", n-refused)
	}
	if g := storedGrant(t, store, "p"); g == nil || tokenClaims("Bearer " + g.AccessToken)["jti"] == first {
		t.Errorf("the stored grant is not the refreshed token")
	}

	// The server refuses the tokens (revoked); the refresh token still works.
	refreshes := as.TokenRequests("refresh_token")
	before := jtiOf(t, h, "p")
	as.RevokeAccessTokens()
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, isErr := call(t, h, "p__whoami"); isErr {
				errs <- got
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("a call after the revocation failed: %s", e)
	}
	if got := as.TokenRequests("refresh_token") - refreshes; got != 1 {
		t.Errorf("%d concurrent calls refused caused %d refresh requests, want 1", n, got)
	}
	if rs.unauthorized.Load() == refused {
		t.Errorf("the server refused nothing: the revocation was not tried")
	}
	if jtiOf(t, h, "p") == before {
		t.Errorf("still the revoked token")
	}
	if as.Authorizations() != 1 {
		t.Errorf("%d authorizations, want 1", as.Authorizations())
	}
}

// TestOAuthExpiredWithoutRefreshToken: a grant without a refresh token
// whose access token expired starts a login, rather than failing every
// request before it is sent.
func TestOAuthExpiredWithoutRefreshToken(t *testing.T) {
	as := authtest.New(t)
	as.IssueRefreshTokens(false)
	// Expired for golang.org/x/oauth2 (10 s early) one second after it is
	// issued; the server takes it for 30 s more (its clock skew).
	as.SetAccessTokenLifetime(11 * time.Second)
	rs := newResource(t, as, "")
	h, _ := startCodeHost(t, []upstream.ServerConfig{codeServer("p", rs)}, &Options{Grants: grantsFile(t)})
	login(t, h, "p")
	if g := storedGrant(t, h.oauth.Grants, "p"); g == nil || g.RefreshToken != "" {
		t.Fatalf("grant %+v, want one without a refresh token", g)
	}
	time.Sleep(1500 * time.Millisecond)
	got, isErr := call(t, h, "p__whoami")
	if !isErr || !strings.Contains(got, "needs an OAuth login, which only an operator can give") {
		t.Fatalf("call with an expired token and no refresh token = %q, want an operator's login asked for", got)
	}
	as.SetAccessTokenLifetime(time.Hour)
	login(t, h, "p")
	if got, isErr := call(t, h, "p__whoami"); isErr {
		t.Fatalf("p__whoami after the new login = %q", got)
	}
}

// TestOAuthRefreshOutage: a refresh that fails because the authorization
// server is down (5xx) fails the call but keeps the grant, and starts no
// login; once the server is back, the refresh works.
func TestOAuthRefreshOutage(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	h, _ := startCodeHost(t, []upstream.ServerConfig{codeServer("p", rs)}, &Options{Grants: grantsFile(t)})
	login(t, h, "p")
	as.RevokeAccessTokens()
	as.FailTokenRequests(http.StatusServiceUnavailable)
	got, isErr := call(t, h, "p__whoami")
	if !isErr || strings.Contains(got, "needs an OAuth login") || !strings.Contains(got, "503") {
		t.Fatalf("call during the outage = %q, want the authorization server's 503, and no login", got)
	}
	t.Logf("during the outage: %s", got)
	if st := statusOf(h, "p"); st.AuthURL != "" {
		t.Errorf("an outage started a login: %+v", st)
	}
	as.FailTokenRequests(0)
	testproc.WaitFor(t, "calls to work again", 20*time.Second, func() bool {
		_, isErr := call(t, h, "p__whoami")
		return !isErr
	})
	if n := as.Authorizations(); n != 1 {
		t.Errorf("%d authorizations, want 1", n)
	}
	if st := statusOf(h, "p"); st.AuthURL != "" {
		t.Errorf("status %+v", st)
	}
}

// TestOAuthWaitLogins: with Options.WaitLogins, a connect that needs a
// login waits for it (Announce is told the link) and then succeeds.
func TestOAuthWaitLogins(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	var announced atomic.Int32
	opts := &Options{Grants: grantsFile(t), WaitLogins: true, Announce: func(server, link string) {
		announced.Add(1)
		go open(link)
	}}
	h, _ := startCodeHost(t, []upstream.ServerConfig{codeServer("p", rs)}, opts)
	if st := statusOf(h, "p"); st.State != upstream.StateConnected {
		t.Fatalf("after Start: %s (%s)", st.State, st.Error)
	}
	if got, isErr := call(t, h, "p__whoami"); isErr {
		t.Fatalf("p__whoami = %q", got)
	}
	if n := announced.Load(); n != 1 {
		t.Errorf("%d links announced, want 1", n)
	}
}

// TestOAuthRevokedRefreshToken: when the authorization server refuses the
// refresh token, the server goes back to authorizing, calls fail at once
// with the new link, other servers are not affected, and the login brings
// it back.
func TestOAuthRevokedRefreshToken(t *testing.T) {
	as1, as2 := authtest.New(t), authtest.New(t)
	p, q := newResource(t, as1, ""), newResource(t, as2, "")
	h, _ := startCodeHost(t, []upstream.ServerConfig{codeServer("p", p), codeServer("q", q)}, &Options{Grants: grantsFile(t)})
	login(t, h, "p")
	login(t, h, "q")

	as1.RevokeRefreshTokens()
	as1.RevokeAccessTokens()
	start := time.Now()
	got, isErr := call(t, h, "p__whoami")
	if !isErr || !strings.Contains(got, "needs an OAuth login") {
		t.Fatalf("call with a revoked grant = %q", got)
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("the call took %s", took)
	}
	link := waitAuthorizing(t, h, "p")
	t.Logf("status authorizing %s after the revocation", time.Since(start).Round(time.Millisecond))
	// The link picks every caller's account: administrators read it in
	// the status, callers are told an operator must log in.
	if strings.Contains(got, link) || !strings.Contains(got, "mcphost auth login p CONFIG") {
		t.Errorf("the call's error %q gives the link %s, or not what to do", got, link)
	}
	if got, isErr := call(t, h, "p__whoami"); !isErr || !strings.Contains(got, "only an operator can give") {
		t.Errorf("a later call = %q, want an operator's login asked for", got)
	}
	if got, isErr := call(t, h, "q__whoami"); isErr {
		t.Errorf("q__whoami = %q", got)
	}
	if st := statusOf(h, "q"); st.State != upstream.StateConnected {
		t.Errorf("q is %s", st.State)
	}

	login(t, h, "p")
	if got, isErr := call(t, h, "p__whoami"); isErr {
		t.Fatalf("p__whoami after the new login = %q", got)
	}
	if as1.Authorizations() != 2 || as2.Authorizations() != 1 {
		t.Errorf("authorizations: p %d (want 2), q %d (want 1)", as1.Authorizations(), as2.Authorizations())
	}
}

// TestOAuthStepUp: a call refused with 403 insufficient_scope starts a new
// login for the union of the granted scopes and the ones asked for; once
// it completes, the call works and the others never stopped.
func TestOAuthStepUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		scopes  []string // the oauth block's scopes
		restart bool     // the grant is one a host stored before
	}{
		{"discovered scopes", nil, false},
		{"configured scopes", []string{"mcp:tools"}, false},
		{"stored grant", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := authtest.New(t)
			rs := newResource(t, as, "mcp:admin")
			cfg := codeServer("p", rs)
			cfg.OAuth.Scopes = tc.scopes
			store := grantsFile(t)
			h, _ := startCodeHost(t, []upstream.ServerConfig{cfg}, &Options{Grants: store})
			login(t, h, "p")
			if tc.restart {
				h.Close()
				h, _ = startCodeHost(t, []upstream.ServerConfig{cfg}, &Options{Grants: store})
				waitConnected(t, h, "p")
			}
			if got, isErr := call(t, h, "p__whoami"); isErr || strings.Contains(got, "mcp:admin") {
				t.Fatalf("p__whoami = %q", got)
			}

			got, isErr := call(t, h, "p__secret")
			if !isErr || !strings.Contains(got, "needs an OAuth login, which only an operator can give") || rs.forbidden.Load() == 0 {
				t.Fatalf("p__secret without the scope = %q (%d refused with 403)", got, rs.forbidden.Load())
			}
			if got, isErr := call(t, h, "p__whoami"); isErr {
				t.Errorf("p__whoami during the step-up = %q", got)
			}
			link := waitAuthorizing(t, h, "p")
			if code, page := click(t, link); code != http.StatusOK {
				t.Fatalf("callback answered %d: %s", code, page)
			}
			if as.Authorizations() != 2 {
				t.Fatalf("%d authorizations, want 2", as.Authorizations())
			}
			scope := strings.Fields(as.LastAuthorization().Get("scope"))
			if !slices.Contains(scope, "mcp:tools") || !slices.Contains(scope, "mcp:admin") {
				t.Fatalf("step-up asked for scope %q, want mcp:tools and mcp:admin", scope)
			}
			testproc.WaitFor(t, "the step-up to complete", 15*time.Second, func() bool {
				got, isErr := call(t, h, "p__secret")
				return !isErr && got == "classified"
			})
			if got, _ := call(t, h, "p__whoami"); !strings.Contains(got, "mcp:admin") || !strings.Contains(got, "mcp:tools") {
				t.Errorf("after the step-up p__whoami = %q", got)
			}
		})
	}
}

// TestOAuthStepUpDenied: a refused step-up leaves the grant as it was:
// the other tools work, and the server, once idle, is not shown as
// unauthorized.
func TestOAuthStepUpDenied(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "mcp:admin")
	cfg := codeServer("p", rs)
	cfg.IdleTimeout = time.Second
	h, _ := startCodeHost(t, []upstream.ServerConfig{cfg}, &Options{Grants: grantsFile(t)})
	login(t, h, "p")
	as.SetConsent(authtest.Deny)
	got, isErr := call(t, h, "p__secret")
	if !isErr || !strings.Contains(got, "needs an OAuth login, which only an operator can give") {
		t.Fatalf("p__secret without the scope = %q", got)
	}
	link := waitAuthorizing(t, h, "p")
	if code, _ := click(t, link); code != http.StatusBadRequest {
		t.Fatalf("denied step-up answered %d", code)
	}
	if got, isErr := call(t, h, "p__whoami"); isErr {
		t.Fatalf("p__whoami after a denied step-up = %q", got)
	}
	testproc.WaitFor(t, "an idle disconnect", 10*time.Second, func() bool { return statusOf(h, "p").State != upstream.StateConnected })
	if st := statusOf(h, "p"); st.State != upstream.StateDisconnected {
		t.Errorf("idle after a denied step-up: %s (%s)", st.State, st.Error)
	}
	if got, isErr := call(t, h, "p__whoami"); isErr {
		t.Fatalf("p__whoami after the idle disconnect = %q", got)
	}
}

// TestOAuthCallbackState: a callback whose state is not a login's answers
// 400 and completes nothing; the login's own callback then completes it,
// once. An authorization server's access_denied fails the login: the
// status says unauthorized, and why.
func TestOAuthCallbackState(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	as.SetConsent(authtest.Hold)
	h, base := startCodeHost(t, []upstream.ServerConfig{codeServer("p", rs)}, &Options{Grants: grantsFile(t)})
	link := waitAuthorizing(t, h, "p")
	if code, _ := click(t, link); code != http.StatusOK {
		t.Fatalf("held authorization answered %d", code)
	}
	held := as.Held()
	if len(held) != 1 || !strings.HasPrefix(held[0], base+upstream.CallbackPath+"?") {
		t.Fatalf("held redirects %q", held)
	}
	good, err := url.Parse(held[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, mutate := range []func(url.Values){
		func(q url.Values) { q.Set("state", q.Get("state")+"x") },
		func(q url.Values) { q.Del("state") },
		func(q url.Values) { q.Set("state", "") },
		func(q url.Values) { q.Set("state", strings.ToLower(q.Get("state"))) },
		func(q url.Values) { q.Set("error", "access_denied"); q.Set("state", "other") },
		func(q url.Values) { q.Set("state", "other") },
	} {
		q := good.Query()
		mutate(q)
		bad := *good
		bad.RawQuery = q.Encode()
		if code, page := click(t, bad.String()); code != http.StatusBadRequest || !strings.Contains(page, "refused") {
			t.Errorf("callback %s answered %d: %s", bad.RawQuery, code, page)
		}
	}
	if st := statusOf(h, "p"); st.State != upstream.StateAuthorizing || st.AuthURL != link {
		t.Fatalf("after wrong callbacks: %s %q", st.State, st.AuthURL)
	}
	if n := as.TokenRequests("authorization_code"); n != 0 {
		t.Fatalf("%d code exchanges after wrong callbacks", n)
	}
	if code, page := click(t, held[0]); code != http.StatusOK || !strings.Contains(page, "Authorized") {
		t.Fatalf("the login's callback answered %d: %s", code, page)
	}
	waitConnected(t, h, "p")
	if code, _ := click(t, held[0]); code != http.StatusBadRequest {
		t.Errorf("the callback again answered %d, want 400", code)
	}
	if n := as.TokenRequests("authorization_code"); n != 1 {
		t.Errorf("%d code exchanges, want 1", n)
	}

	t.Run("access denied", func(t *testing.T) {
		as := authtest.New(t)
		rs := newResource(t, as, "")
		as.SetConsent(authtest.Deny)
		h, _ := startCodeHost(t, []upstream.ServerConfig{codeServer("p", rs)}, &Options{Grants: grantsFile(t)})
		// Status is read as the login fails: a reconnect soon starts another.
		var seen upstream.Status
		done := make(chan struct{})
		go func() {
			defer close(done)
			deadline := time.Now().Add(15 * time.Second)
			for time.Now().Before(deadline) {
				if st := statusOf(h, "p"); st.State == upstream.StateUnauthorized {
					seen = st
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		link := waitAuthorizing(t, h, "p")
		code, page := click(t, link)
		if code != http.StatusBadRequest || !strings.Contains(page, "access_denied") {
			t.Errorf("callback with access_denied answered %d: %s", code, page)
		}
		<-done
		if seen.State != upstream.StateUnauthorized || !strings.Contains(seen.Error, "access_denied") {
			t.Fatalf("status after access_denied: %+v", seen)
		}
		t.Logf("unauthorized: %s", seen.Error)
	})
}

// TestOAuthTokensNotShown: no code, access token or refresh token shows in
// the status (Go and HTTP), in call errors or in the trace log, through a
// login, a refresh, a refused refresh and a second login.
func TestOAuthTokensNotShown(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	store := grantsFile(t)
	var logs testproc.Buffer
	log := hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Trace, Output: &logs})
	h, base := startCodeHost(t, []upstream.ServerConfig{codeServer("p", rs)}, &Options{Grants: store, Logger: log})
	var shown []string
	show := func(what string) { shown = append(shown, what) }
	status := func() {
		b, _ := json.Marshal(h.Statuses())
		show(string(b))
		_, page := click(t, base+"/status")
		show(page)
	}
	status()
	login(t, h, "p")
	got, _ := call(t, h, "p__whoami")
	show(got)
	as.RevokeAccessTokens() // a refresh
	got, _ = call(t, h, "p__whoami")
	show(got)
	status()
	as.RevokeAccessTokens()
	as.RevokeRefreshTokens() // a refused refresh, and a login
	got, isErr := call(t, h, "p__whoami")
	if !isErr {
		t.Fatalf("call after revoking everything = %q", got)
	}
	show(got)
	status()
	login(t, h, "p")
	status()
	show(logs.String())

	secrets := as.IssuedSecrets()
	if len(secrets) < 6 {
		t.Fatalf("only %d secrets issued", len(secrets))
	}
	if g := storedGrant(t, store, "p"); g == nil || !slices.Contains(secrets, g.AccessToken) {
		t.Fatal("the stored grant holds no token the authorization server issued")
	}
	for _, s := range secrets {
		for _, text := range shown {
			if strings.Contains(text, s) {
				t.Errorf("%s... shows in %.300s", s[:12], text)
			}
		}
	}
	if !strings.Contains(logs.String(), "OAuth login complete") {
		t.Errorf("the trace log is not the host's: %.500s", logs.String())
	}
}

// FuzzOAuthCallback: whatever the query, the callback does not panic and
// completes no login but the one its state names.
func FuzzOAuthCallback(f *testing.F) {
	const s1, s2 = "QMRDQ4LX6BJDUXS5YAZK2K3RZ3", "Z6E3H5M7BVN2C4X8A9QWERTY12"
	for _, seed := range []string{
		"", "state=" + s1 + "&code=abc&iss=http%3A%2F%2F127.0.0.1", "state=" + s2 + "&error=access_denied&error_description=no",
		"state=" + s1 + "&state=" + s2, "state=x", "state=", "code=c", "state=%zz&code=1", "state=" + s1 + ";code=1",
		"error=%3Cscript%3E&state=" + s1, "state=" + strings.ToLower(s1), "state=" + s1 + "%00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, query string) {
		l := &upstream.Logins{}
		pending := map[string]*upstream.PendingLogin{}
		for _, s := range []string{s1, s2} {
			p, _, err := l.Expect("srv", "", "https://as.example/authorize?client_id=c&state="+s, "http://127.0.0.1:7700"+upstream.CallbackPath)
			if err != nil {
				t.Fatal(err)
			}
			pending[s] = p
		}
		r := httptest.NewRequest(http.MethodGet, "/oauth/callback", nil)
		r.URL.RawQuery = query
		w := httptest.NewRecorder()
		l.ServeHTTP(w, r)
		state := r.URL.Query().Get("state")
		for s, p := range pending {
			select {
			case res := <-p.Done:
				if s != state {
					t.Fatalf("query %q completed the login of state %s", query, s)
				}
				if res.Err == nil && res.Res.State != s {
					t.Fatalf("query %q: result for state %q", query, res.Res.State)
				}
			default:
				if s == state {
					t.Fatalf("query %q did not complete its login", query)
				}
			}
		}
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("status %d", w.Code)
		}
		if w.Code == http.StatusOK && (state != s1 && state != s2) {
			t.Fatalf("query %q answered 200", query)
		}
	})
}
