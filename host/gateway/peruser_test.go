package gateway

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// oauth mode per_user against a real protected server and authorization
// server on loopback: callers are API keys of listen.auth, each logs in as
// a different user of the authorization server (authtest.SetUser), and
// the server's whoami tool says whose token each call carried.

var perUserAuth = &auth.Config{Keys: []auth.Key{
	keyFor("alice", "alice-key-0123456789", nil, nil),
	keyFor("bob", "bob-key-0123456789", nil, nil),
	keyFor("carol", "carol-key-0123456789", nil, nil),
	keyFor("root", rootKey, []string{DefaultAdminGroup}, nil),
}}

// keyOf is the API key of subject in perUserAuth.
func keyOf(subject string) string { return subject + "-key-0123456789" }

// startPerUser starts a host with one per_user server "gh" in front of rs,
// already logged in as the gateway ("operator"), and returns its /mcp URL.
func startPerUser(t *testing.T, rs *resource, opts *Options) (*Host, string) {
	t.Helper()
	srv := codeServer("gh", rs)
	srv.OAuth.Mode = upstream.OAuthPerUser
	h, base := startCodeHostConfig(t, Config{Listen: listener.Config{Auth: perUserAuth}, Servers: []upstream.ServerConfig{srv}}, opts)
	if len(h.Config().Servers) != 1 || h.Config().Servers[0].Sessions != upstream.SessionsPerClient {
		t.Fatalf("per_user implies sessions = %q", upstream.SessionsPerClient)
	}
	testproc.WaitFor(t, "gh to connect or ask for a login", 15*time.Second, func() bool {
		st := statusOf(h, "gh")
		return st.State == upstream.StateConnected || st.AuthURL != ""
	})
	if statusOf(h, "gh").State != upstream.StateConnected {
		rs.as.SetUser("operator")
		login(t, h, "gh")
	}
	return h, base + "/mcp"
}

// dialAs connects a client with an API key of perUserAuth.
func dialAs(t *testing.T, url, key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "peruser", Version: "1"}, opts).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: authClient(key)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// whoami calls gh__whoami and returns its text and isError.
func whoami(t *testing.T, cs *mcp.ClientSession) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gh__whoami"})
	if err != nil {
		t.Fatalf("gh__whoami: %v", err)
	}
	return text(t, res), res.IsError
}

// mustBe checks that cs's call ran with subject's own token.
func mustBe(t *testing.T, cs *mcp.ClientSession, subject string) string {
	t.Helper()
	got, isErr := whoami(t, cs)
	if isErr || !strings.HasPrefix(got, subject+" (oauth)") {
		t.Fatalf("the call for %s ran as %q (isError %v)", subject, got, isErr)
	}
	return got
}

var loginLink = regexp.MustCompile(`open (http\S+), then call again`)

// linkOf is the login link an error result gives.
func linkOf(t *testing.T, got string) string {
	t.Helper()
	m := loginLink.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no login link in %q", got)
	}
	return m[1]
}

// loginAs opens link as subject's browser.
func loginAs(t *testing.T, as *authtest.Server, subject, link string) {
	t.Helper()
	as.SetUser(subject)
	code, page, err := openAs(link, keyOf(subject))
	if err != nil {
		t.Fatalf("opening %s: %v", link, err)
	}
	if code != http.StatusOK || !strings.Contains(page, "Authorized") {
		t.Fatalf("callback answered %d: %s", code, page)
	}
}

// urlElicitations is a client that takes URL-mode elicitations: it
// answers action to each, opening the link as subject's browser when it
// accepts, and records the ids it was asked and told complete.
type urlElicitations struct {
	t       *testing.T
	as      *authtest.Server
	subject string
	action  string

	mu        sync.Mutex
	asked     []string
	completed []string
}

func (e *urlElicitations) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			p := req.Params
			if p.Mode != "url" || p.URL == "" || p.ElicitationID == "" {
				return nil, fmt.Errorf("want a URL-mode elicitation, got %+v", p)
			}
			e.mu.Lock()
			e.asked = append(e.asked, p.ElicitationID)
			e.mu.Unlock()
			if e.action == "accept" {
				e.as.SetUser(e.subject)
				go func() { // the user's browser, after the client answered
					if code, page, err := openAs(p.URL, keyOf(e.subject)); err != nil || code != http.StatusOK {
						e.t.Errorf("the login link answered %d %q: %v", code, page, err)
					}
				}()
			}
			return &mcp.ElicitResult{Action: e.action}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			e.mu.Lock()
			e.completed = append(e.completed, req.Params.ElicitationID)
			e.mu.Unlock()
		},
	}
}

func (e *urlElicitations) ids() (asked, completed []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.asked...), append([]string(nil), e.completed...)
}

// TestOAuthPerUser: each caller authorizes for themself, by the link in
// the call's result or by a URL-mode elicitation, and from then on every
// call of theirs, alone or among others', carries their own token; the
// gateway's own grant serves none of them.
func TestOAuthPerUser(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	store := grantsFile(t)
	h, url := startPerUser(t, rs, &Options{Grants: store})

	// Alice's client takes no elicitations: her first call fails at once
	// with her own login link.
	alice := dialAs(t, url, "alice-key-0123456789", nil)
	start := time.Now()
	got, isErr := whoami(t, alice)
	if !isErr || !strings.Contains(got, "needs you to authorize mcphost with your own account") {
		t.Fatalf("alice's first call = %q (isError %v)", got, isErr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("alice's first call waited %s", took)
	}
	link := linkOf(t, got)
	if st := statusOf(h, "gh"); st.State != upstream.StateConnected || st.Users == nil || st.Users.Authorizing != 1 || st.Users.Authorized != 0 {
		t.Errorf("status while alice logs in: %s %+v", st.State, st.Users)
	}
	loginAs(t, as, "alice", link)
	mustBe(t, alice, "alice")

	// Bob's client takes URL elicitations: one call asks him, waits for his
	// login, and goes on with his token.
	bobUI := &urlElicitations{t: t, as: as, subject: "bob", action: "accept"}
	bob := dialAs(t, url, "bob-key-0123456789", bobUI.options())
	mustBe(t, bob, "bob")
	asked, _ := bobUI.ids()
	if len(asked) != 1 {
		t.Fatalf("bob was asked %d times, want once", len(asked))
	}
	testproc.WaitFor(t, "notifications/elicitation/complete", 5*time.Second, func() bool {
		_, completed := bobUI.ids()
		return len(completed) == 1 && completed[0] == asked[0]
	})

	// Interleaved and concurrent calls: each with its caller's token.
	var wg sync.WaitGroup
	for range 4 {
		for cs, who := range map[*mcp.ClientSession]string{alice: "alice", bob: "bob"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, isErr := whoami(t, cs); isErr || !strings.HasPrefix(got, who+" (oauth)") {
					t.Errorf("a concurrent call for %s ran as %q", who, got)
				}
			}()
		}
	}
	wg.Wait()

	// Carol declines: her call says so and nothing is stored for her.
	carolUI := &urlElicitations{t: t, as: as, subject: "carol", action: "decline"}
	carol := dialAs(t, url, "carol-key-0123456789", carolUI.options())
	if got, isErr := whoami(t, carol); !isErr || !strings.Contains(got, "you did not authorize mcphost") {
		t.Errorf("carol's declined call = %q (isError %v)", got, isErr)
	}

	// No identity, no call: the gateway's own grant is never lent.
	if got, isErr := call(t, h, "gh__whoami"); !isErr || !strings.Contains(got, "no authenticated caller") {
		t.Errorf("an anonymous call = %q (isError %v)", got, isErr)
	}

	for subject, want := range map[string]string{"": "operator", "key:alice": "alice", "key:bob": "bob", "key:carol": ""} {
		g, err := store.Get(context.Background(), "gh", subject)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case want == "" && g != nil:
			t.Errorf("a grant was stored for %q", subject)
		case want != "" && (g == nil || tokenClaims("Bearer " + g.AccessToken)["sub"] != want):
			t.Errorf("the grant of %q is not %s's: %+v", subject, want, g)
		}
	}
	if st := statusOf(h, "gh"); st.Users == nil || st.Users.Authorized != 2 {
		t.Errorf("status users %+v, want 2 authorized", st.Users)
	}
	// The callers' logins used the client the gateway's registered.
	if n := as.Registrations(); n != 1 {
		t.Errorf("%d dynamic registrations, want 1 (the gateway's)", n)
	}
	h.Close()

	// A restart: the stored grants serve their callers with no login.
	h2, url2 := startPerUser(t, rs, &Options{Grants: store})
	mustBe(t, dialAs(t, url2, "bob-key-0123456789", nil), "bob")
	mustBe(t, dialAs(t, url2, "alice-key-0123456789", nil), "alice")
	if st := statusOf(h2, "gh"); st.Users == nil || st.Users.Authorized != 2 {
		t.Errorf("status users after a restart %+v, want 2 authorized", st.Users)
	}
}

// TestOAuthPerUserRefresh: a caller's token is refreshed before it
// expires with their own refresh token; when the authorization server
// refuses that, only that caller is asked to log in again.
func TestOAuthPerUserRefresh(t *testing.T) {
	as := authtest.New(t)
	rs := newResource(t, as, "")
	h, url := startPerUser(t, rs, &Options{Grants: grantsFile(t)})

	alice := dialAs(t, url, "alice-key-0123456789", nil)
	bob := dialAs(t, url, "bob-key-0123456789", nil)
	// golang.org/x/oauth2 counts a token as expired 10 s early: bob's
	// expires in an hour, alice's (and those refreshed from it) for
	// mcphost 2 s after each is issued.
	got, _ := whoami(t, bob)
	loginAs(t, as, "bob", linkOf(t, got))
	as.SetAccessTokenLifetime(12 * time.Second)
	got, _ = whoami(t, alice)
	loginAs(t, as, "alice", linkOf(t, got))
	first := mustBe(t, alice, "alice")
	bobFirst := mustBe(t, bob, "bob")

	refused := rs.unauthorized.Load()
	testproc.WaitFor(t, "alice's refreshed token", 15*time.Second, func() bool {
		time.Sleep(200 * time.Millisecond)
		return mustBe(t, alice, "alice") != first
	})
	if n := rs.unauthorized.Load(); n != refused {
		t.Errorf("the server refused %d requests: alice's token was not refreshed before it expired", n-refused)
	}
	if got := mustBe(t, bob, "bob"); got != bobFirst {
		t.Errorf("bob's token changed with alice's refresh: %q, was %q", got, bobFirst)
	}

	// The refresh tokens are revoked: alice's next refresh is refused and
	// she must log in again; bob's token still serves him.
	as.RevokeRefreshTokens()
	testproc.WaitFor(t, "alice asked to log in again", 15*time.Second, func() bool {
		got, isErr := whoami(t, alice)
		return isErr && loginLink.MatchString(got)
	})
	mustBe(t, bob, "bob")
	if st := statusOf(h, "gh"); st.Users == nil || st.Users.Authorizing != 1 || st.Users.Authorized != 1 {
		t.Errorf("status users %+v, want alice authorizing and bob authorized", st.Users)
	}
	got, _ = whoami(t, alice)
	loginAs(t, as, "alice", linkOf(t, got))
	mustBe(t, alice, "alice")
	mustBe(t, bob, "bob")
}
