package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/grants"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// protectedServer is a real MCP server behind OAuth on loopback: mcphost's
// resource-server middleware trusting as, in front of a go-sdk server
// with the tool hello.
func protectedServer(t *testing.T, as *authtest.Server) string {
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

// openLogin opens a login link of a running mcphost in a new browser, as
// the person credential proves: it submits mcphost's login page with it
// and follows the authorization server's redirect back to the callback.
// It returns the final page's status, text and URL.
func openLogin(t *testing.T, link, credential string) (int, string, *neturl.URL) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if at := resp.Request.URL; at.Path == upstream.LoginPath && resp.StatusCode == http.StatusOK {
		resp, err = c.PostForm(at.Scheme+"://"+at.Host+upstream.LoginPath, neturl.Values{"login": {at.Query().Get("login")}, "credential": {credential}})
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	return resp.StatusCode, string(body), resp.Request.URL
}

// TestAuthorizingServer: a running mcphost shows a server that needs a
// login as authorizing, with its link, in `mcphost status`; opening the
// link comes back to its /oauth/callback and the server connects; `auth
// status` shows the grant and `auth logout` forgets it.
func TestAuthorizingServer(t *testing.T) {
	as := authtest.New(t)
	url := protectedServer(t, as)
	addr := testproc.FreeAddr(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.hcl")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
listen {
  http = %q
}
server "p" {
  transport = "streamable-http"
  url       = %q
  oauth {
    mode = "shared"
  }
}
`, addr, url)), 0o644)

	run := exec.Command(mcphostBin, "run", cfg, "--no-watch")
	logs := &testproc.Buffer{}
	run.Stderr = logs
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Process.Signal(os.Interrupt); run.Wait() })
	var out string
	testproc.WaitFor(t, "status to show p authorizing", 20*time.Second, func() bool {
		out, _, _ = mcphost(t, "status", "http://"+addr)
		return strings.Contains(out, "authorizing") && strings.Contains(out, "needs an OAuth login")
	})
	if strings.Contains(logs.String(), "eyJ") {
		t.Fatal("a token reached the log")
	}
	// The table's error column is cut short; the line below it is whole.
	links := regexp.MustCompile(`https?://\S+/oauth/login\?\S+`).FindAllString(out, -1)
	link := ""
	if len(links) > 0 {
		link = links[len(links)-1]
	}
	if link == "" || strings.HasSuffix(link, "...") {
		t.Fatalf("no link in status:\n%s", out)
	}
	// The browser: mcphost's login page (this mcphost authenticates no
	// one: it asks for nothing), then the authorization server's redirect
	// back to mcphost.
	code, body, at := openLogin(t, link, "")
	if code != http.StatusOK || at.Path != "/oauth/callback" {
		t.Fatalf("the login came back %d at %s: %s\nlink %s", code, at, body, link)
	}
	testproc.WaitFor(t, "p to connect after the login", 20*time.Second, func() bool {
		out, _, _ = mcphost(t, "status", "http://"+addr)
		return strings.Contains(out, "connected")
	})
	st, _, code := mcphost(t, "auth", "status", cfg)
	if code != 0 || !strings.Contains(st, "authorized") || !strings.Contains(st, "refreshable") {
		t.Fatalf("auth status: %d\n%s", code, st)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "mcphost-grants.json"))
	if info, _ := os.Stat(filepath.Join(dir, "mcphost-grants.json")); info == nil || info.Mode().Perm() != 0o600 || len(raw) == 0 {
		t.Fatalf("grants file: %v", info)
	}
	if strings.Contains(st, "access_token") || strings.Contains(out, "eyJ") {
		t.Fatal("a token is shown")
	}
	if out, _, code := mcphost(t, "auth", "logout", "p", cfg); code != 0 || !strings.Contains(out, "logged out") {
		t.Fatalf("logout: %d %s", code, out)
	}
	if st, _, _ := mcphost(t, "auth", "status", cfg); !strings.Contains(st, "not authorized") {
		t.Fatalf("after logout: %s", st)
	}
}

// TestAuthLogin: `mcphost auth login` with $BROWSER following the link,
// then `mcphost call` uses the kept grant.
func TestAuthLogin(t *testing.T) {
	as := authtest.New(t)
	url := protectedServer(t, as)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.hcl")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
listen {
  http = %q
}
server "p" {
  transport = "streamable-http"
  url       = %q
  oauth {}
}
`, testproc.FreeAddr(t), url)), 0o644)
	browser := filepath.Join(dir, "browser")
	os.WriteFile(browser, []byte("#!/bin/sh\nexec curl -sS -L -o /dev/null --max-time 20 \"$1\"\n"), 0o755)
	t.Setenv("BROWSER", browser)
	out, errs, code := mcphost(t, "auth", "login", "p", cfg)
	if code != 0 || !strings.Contains(out, "authorized p: 1 tool;") || !strings.Contains(errs, "/authorize?") {
		t.Fatalf("auth login: %d\n%s\n%s", code, out, errs)
	}
	t.Setenv("BROWSER", "/bin/false") // no second login
	out, errs, code = mcphost(t, "call", cfg, "p__hello", "{}")
	if code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("call with the kept grant: %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(errs, "/authorize?") {
		t.Fatalf("call asked for a login again:\n%s", errs)
	}
}

// TestPerUserServer: a per_user server behind a running mcphost. The
// operator's login (the link in `mcphost status`) lists its tools; each
// caller's first call gives them their own link, and their calls then
// carry their own token; `mcphost status` counts them and `auth status`
// lists their grants, which `auth logout --subject` removes one by one.
func TestPerUserServer(t *testing.T) {
	as := authtest.New(t)
	url := protectedServer(t, as)
	addr := testproc.FreeAddr(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.hcl")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
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
    key "admin" {
      value   = %q
      subject = "root"
      groups  = ["admins"]
    }
  }
}
server "p" {
  transport = "streamable-http"
  url       = %q
  oauth {
    mode = "per_user"
  }
}
`, addr, aliceKey, bobKey, adminKey, url)), 0o644)

	run := exec.Command(mcphostBin, "run", cfg, "--no-watch")
	logs := &testproc.Buffer{}
	run.Stderr = logs
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Process.Signal(os.Interrupt); run.Wait() })
	linkRe := regexp.MustCompile(`https?://\S+/oauth/login\?[^\s,]+`)
	follow := func(who, key, link string) {
		t.Helper()
		as.SetUser(who)
		if code, body, _ := openLogin(t, link, key); code != http.StatusOK || !strings.Contains(body, "Authorized") {
			t.Fatalf("%s's login came back %d: %s", who, code, body)
		}
	}

	var out string
	testproc.WaitFor(t, "status to show p authorizing", 20*time.Second, func() bool {
		out, _, _ = mcphost(t, "status", "http://"+addr, "--token", adminKey)
		return strings.Contains(out, "needs an OAuth login")
	})
	// The table's error column is cut short; the line below it is whole.
	links := linkRe.FindAllString(out, -1)
	follow("operator", adminKey, links[len(links)-1])
	testproc.WaitFor(t, "p to connect", 20*time.Second, func() bool {
		out, _, _ = mcphost(t, "status", "http://"+addr, "--token", adminKey)
		return strings.Contains(out, "connected")
	})

	callAs := func(key string) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: bearer{token: key, base: http.DefaultTransport}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
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
	for _, who := range []struct{ name, key string }{{"alice", aliceKey}, {"bob", bobKey}} {
		got, isErr := callAs(who.key)
		link := linkRe.FindString(got)
		if !isErr || link == "" || !strings.Contains(got, "your own account") {
			t.Fatalf("%s's first call = %q", who.name, got)
		}
		follow(who.name, who.key, link)
	}
	for range 2 {
		for _, who := range []struct{ name, key string }{{"alice", aliceKey}, {"bob", bobKey}} {
			if got, isErr := callAs(who.key); isErr || got != "hello "+who.name+" (oauth)" {
				t.Fatalf("%s's call = %q", who.name, got)
			}
		}
	}
	if out, _, _ = mcphost(t, "status", "http://"+addr, "--token", adminKey); !strings.Contains(out, "2 authorized") {
		t.Errorf("status:\n%s", out)
	}
	st, _, code := mcphost(t, "auth", "status", cfg)
	if code != 0 || !strings.Contains(st, "for key:alice") || !strings.Contains(st, "for key:bob") {
		t.Fatalf("auth status: %d\n%s", code, st)
	}
	if strings.Contains(logs.String(), "eyJ") || strings.Contains(st, "eyJ") {
		t.Fatal("a token was shown")
	}
	if out, _, code := mcphost(t, "auth", "logout", "p", cfg, "--subject", "key:bob"); code != 0 || !strings.Contains(out, "logged key:bob out") {
		t.Fatalf("logout: %d %s", code, out)
	}
	if st, _, _ := mcphost(t, "auth", "status", cfg); strings.Contains(st, "key:bob") || !strings.Contains(st, "key:alice") {
		t.Fatalf("after bob's logout:\n%s", st)
	}
}

// TestAuthStatusInStore: with a keyed store and no grants block, `mcphost
// auth` reads and removes the grants in the store, where replicas share
// them.
func TestAuthStatusInStore(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.hcl")
	key := strings.Repeat("A", 43) + "="
	os.WriteFile(cfg, []byte(`
server "gh" {
  transport = "streamable-http"
  url       = "https://mcp.example.com/mcp"
  oauth {
    mode = "per_user"
  }
}
store {
  sqlite = "state.db"
  key    = "`+key+`"
}
`), 0o644)
	db, err := store.Open(context.Background(), store.Options{Driver: store.SQLite, DSN: filepath.Join(dir, "state.db"), Key: mustKey(t, key)})
	if err != nil {
		t.Fatal(err)
	}
	g, err := db.Grants()
	if err != nil {
		t.Fatal(err)
	}
	err = g.Put(context.Background(), grants.New("gh", "key:alice", &oauth2.Config{ClientID: "c"}, &oauth2.Token{AccessToken: "at-secret", RefreshToken: "rt"}))
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _, code := mcphost(t, "auth", "status", cfg)
	if code != 0 || !strings.Contains(out, "grants in the store (") || !strings.Contains(out, "for key:alice") || strings.Contains(out, "at-secret") {
		t.Fatalf("auth status: %d\n%s", code, out)
	}
	if out, _, code := mcphost(t, "auth", "logout", "gh", cfg, "--subject", "key:alice"); code != 0 || !strings.Contains(out, "logged key:alice out") {
		t.Fatalf("logout: %d %s", code, out)
	}
	if out, _, _ := mcphost(t, "auth", "status", cfg); strings.Contains(out, "key:alice") {
		t.Fatalf("after logout:\n%s", out)
	}
}

func mustKey(t *testing.T, s string) []byte {
	t.Helper()
	k, err := store.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
