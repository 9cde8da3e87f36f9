package gateway

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// whoPolicy titles every tool with who listed it, and lets only alice
// call.
type whoPolicy struct{ ToolsOnly }

func (whoPolicy) ToolsList(_ context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	out := append([]abi.Tool(nil), in.Tools...)
	for i := range out {
		c := in.Caller
		out[i].Title = c.Subject + "|" + strings.Join(c.Groups, ",") + "|" + c.AuthMethod + "|" + c.Attributes["team"] + "|" + c.Identity
	}
	return out, nil
}

func (whoPolicy) ToolCall(_ context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if in.Caller.Subject != "alice" {
		return &abi.CallDecision{Action: abi.ActionDeny, Reason: "only alice, not " + in.Caller.Subject}, nil
	}
	return &abi.CallDecision{Action: abi.ActionAllow}, nil
}

func (whoPolicy) ToolResult(_ context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	return in.Result, nil
}

func (whoPolicy) Generation() uint64 { return 1 }

var testAuth = &auth.Config{
	Keys: []auth.Key{
		keyFor("alice", "alice-key-0123456789", []string{"eng"}, map[string]string{"team": "core"}),
		keyFor("bob", "bob-key-0123456789", []string{"ops"}, nil),
	},
	StdioKey: "bob",
}

func keyFor(subject, value string, groups []string, attrs map[string]string) auth.Key {
	k := auth.KeyFromValue(subject, value)
	k.Subject, k.Groups, k.Attributes = subject, groups, attrs
	return k
}

func authClient(token string) *http.Client {
	return &http.Client{Transport: upstream.HeaderTransport{Base: http.DefaultTransport, Headers: map[string]string{"Authorization": "Bearer " + token}}}
}

// TestIdentityReachesPolicies: the identity a key gives reaches the
// policies on every transport, the tools/list shortcut included, and
// decides what each caller may do.
func TestIdentityReachesPolicies(t *testing.T) {
	h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{stdioServer("a")}}, &Options{Policy: whoPolicy{}})
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close) // after the sessions close: an SSE stream holds its connection
	ctx := context.Background()
	check := func(name string, cs *mcp.ClientSession, wantTitle string, mayCall bool) {
		t.Helper()
		for range 2 { // the second listing takes the shortcut
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := res.Tools[0].Title; got != wantTitle {
				t.Errorf("%s: the policy saw %q, want %q", name, got, wantTitle)
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "x"}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError == mayCall {
			t.Errorf("%s: call isError %v", name, res.IsError)
		}
	}
	// Streamable HTTP at 2025-11-25: the shortcut serves sessions.
	legacy := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	connect := func(tr mcp.Transport, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "id"}, nil).Connect(ctx, tr, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice := "alice|eng|key|core|alice"
	check("streamable alice", connect(&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: authClient("alice-key-0123456789")}, legacy), alice, true)
	check("streamable bob", connect(&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: authClient("bob-key-0123456789")}, legacy), "bob|ops|key||bob", false)
	check("sse alice", connect(&mcp.SSEClientTransport{Endpoint: srv.URL + "/sse", HTTPClient: authClient("alice-key-0123456789")}, nil), alice, true)

	// stdio: the identity of listen.auth.stdio_key.
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.MCPServer(DownstreamStdio).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	check("stdio", connect(ct, nil), "bob|ops|config||bob", false)
}

// TestSSESessionBound: a legacy SSE session id is worth nothing to
// another identity.
func TestSSESessionBound(t *testing.T) {
	h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/sse", nil)
	req.Header.Set("Authorization", "Bearer alice-key-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var endpoint string
	sc := bufio.NewScanner(resp.Body)
	for endpoint == "" && sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			endpoint = v
		}
	}
	if !strings.Contains(endpoint, "sessionid=") {
		t.Fatalf("no endpoint event: %q", endpoint)
	}
	post := func(token string) int {
		req, _ := http.NewRequest("POST", srv.URL+endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("bob-key-0123456789"); code != http.StatusNotFound {
		t.Errorf("bob posting to alice's SSE session: %d, want 404", code)
	}
	if code := post("alice-key-0123456789"); code != http.StatusAccepted {
		t.Errorf("alice posting to her SSE session: %d, want 202", code)
	}
}

// TestOAuthThroughHost: a real MCP client with an access token from a real
// authorization server on loopback: its claims reach the policies, and a
// token for another resource, or without the scope, gets no session.
func TestOAuthThroughHost(t *testing.T) {
	as := authtest.New(t)
	const aud = "https://mcp.example.com/mcp"
	cfg := &auth.Config{OAuth: &auth.OAuth{Issuer: as.URL, Audience: aud, Scopes: []string{"mcp:tools"}, Attributes: map[string]string{"team": "team"}}}
	logs := &testproc.Buffer{}
	h := startHost(t, Config{Listen: listener.Config{Auth: cfg}, Servers: []upstream.ServerConfig{stdioServer("a")}},
		&Options{Policy: whoPolicy{}, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: logs})})
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	var tokens []string
	connect := func(token string) (*mcp.ClientSession, error) {
		tokens = append(tokens, token)
		return mcp.NewClient(&mcp.Implementation{Name: "oauth"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: authClient(token)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}
	// The client gets its token from the authorization server's token
	// endpoint, as an OAuth client does (client_credentials).
	as.AddClient("alice-app", authtest.Client{Secret: "s3cret", Subject: "alice", Audience: aud})
	cc := clientcredentials.Config{ClientID: "alice-app", ClientSecret: "s3cret", TokenURL: as.URL + "/token"}
	if tok, err := cc.Token(ctx); err == nil {
		tokens = append(tokens, tok.AccessToken) // a token like the one the client uses, for the log check
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "oauth"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: cc.Client(ctx)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Tools[0].Title; got != "alice|eng|oauth|platform|alice" {
		t.Errorf("the policy saw %q", got)
	}
	if call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "x"}}); err != nil || call.IsError {
		t.Errorf("alice's call: %v %v", call, err)
	}
	for name, tok := range map[string]string{
		"another audience": as.Token(t, "alice", "https://other.example/mcp", nil),
		"no scope":         as.Token(t, "alice", aud, map[string]any{"scope": "openid"}),
		"expired":          as.Token(t, "alice", aud, map[string]any{"exp": 1}),
	} {
		if cs, err := connect(tok); err == nil {
			cs.Close()
			t.Errorf("%s: connected", name)
		}
	}
	// No token, good or refused, reaches the log, at trace level either;
	// the refusals do, with their reasons.
	for _, tok := range tokens {
		if strings.Contains(logs.String(), tok) || strings.Contains(logs.String(), tok[len(tok)-40:]) {
			t.Fatal("an access token is in the log")
		}
	}
	if !strings.Contains(logs.String(), "request refused") {
		t.Errorf("the refusals are not logged:\n%s", logs.String())
	}
}

// TestPerClientSessionsPerIdentity: with sessions = "per_client" an
// identity's downstream sessions share one upstream session (one process
// here), other identities get their own, and it ends with the identity's
// last session; "per_session" keeps one per downstream session.
func TestPerClientSessionsPerIdentity(t *testing.T) {
	for _, mode := range []string{upstream.SessionsPerClient, upstream.SessionsPerSession} {
		t.Run(mode, func(t *testing.T) {
			sc := stdioServer("a")
			sc.Sessions = mode
			h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{sc}}, nil)
			srv := httptest.NewServer(h.Handler())
			t.Cleanup(srv.Close)
			ctx := context.Background()
			connect := func(token string) *mcp.ClientSession {
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "pc"}, nil).Connect(ctx,
					&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: authClient(token)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					t.Fatal(err)
				}
				return cs
			}
			pid := func(cs *mcp.ClientSession) string { return okText(t, cs, "a__pid", nil) }
			alice1, alice2, bob := connect("alice-key-0123456789"), connect("alice-key-0123456789"), connect("bob-key-0123456789")
			defer bob.Close()
			p1, p2, pb := pid(alice1), pid(alice2), pid(bob)
			if pb == p1 || pb == p2 {
				t.Errorf("bob shares alice's upstream process %s", pb)
			}
			if (p1 == p2) != (mode == upstream.SessionsPerClient) {
				t.Errorf("alice's two sessions: processes %s and %s", p1, p2)
			}
			alice1.Close()
			testproc.WaitFor(t, "alice's first session to end", 10*time.Second, func() bool { return h.sessions.count() == 2 })
			if p := pid(alice2); mode == upstream.SessionsPerClient && p != p1 {
				t.Errorf("alice's second session moved from %s to %s when her first ended", p1, p)
			}
			alice2.Close()
			testproc.WaitFor(t, "alice's upstream session to end", 10*time.Second, func() bool {
				return h.upstreamNamed("a").Status().ClientSessions == 1
			})
		})
	}
}

// TestPerIdentitySubscriptions: two sessions of one identity share an
// upstream session and its subscriptions; one unsubscribing leaves the
// other's in place, and updates reach only the sessions that asked.
func TestPerIdentitySubscriptions(t *testing.T) {
	sc := stdioServer("a", "-subscribable")
	sc.Sessions = upstream.SessionsPerClient
	h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{sc}}, nil)
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	var got [3]atomic.Int32
	connect := func(i int, token string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "sub"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { got[i].Add(1) },
		}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: authClient(token)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice1, alice2, bob := connect(0, "alice-key-0123456789"), connect(1, "alice-key-0123456789"), connect(2, "bob-key-0123456789")
	for _, cs := range []*mcp.ClientSession{alice1, alice2, bob} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://ticker"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice1.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://ticker"}); err != nil {
		t.Fatal(err)
	}
	if txt, isErr := callText(t, alice2, "a__update_burst", map[string]any{"count": 3, "size": 1}); isErr {
		t.Fatal(txt)
	}
	testproc.WaitFor(t, "alice's second session to get the updates", 10*time.Second, func() bool { return got[1].Load() == 3 })
	// What alice's burst sent went out on her upstream session only: bob's
	// is another process, and alice's first session unsubscribed.
	if txt, isErr := callText(t, bob, "a__update_burst", map[string]any{"count": 2, "size": 1}); isErr {
		t.Fatal(txt)
	}
	testproc.WaitFor(t, "bob to get his updates", 10*time.Second, func() bool { return got[2].Load() == 2 })
	if n := got[0].Load(); n != 0 {
		t.Errorf("alice's unsubscribed session got %d updates", n)
	}
	if n := got[1].Load(); n != 3 {
		t.Errorf("alice's second session got %d updates, want 3 (bob's burst leaked?)", n)
	}
}

// TestSessionNeedsTheSameRights: a key with the same subject but fewer
// groups cannot use a session a stronger key opened.
func TestSessionNeedsTheSameRights(t *testing.T) {
	cfg := &auth.Config{Keys: []auth.Key{
		keyFor("alice", "alice-admin-0123456789", []string{"admins"}, nil),
		keyFor("alice", "alice-readonly-0123456789", []string{"readonly"}, nil),
	}}
	h := startHost(t, Config{Listen: listener.Config{Auth: cfg}, Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "rights"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: authClient("alice-admin-0123456789")}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for token, want := range map[string]int{"alice-readonly-0123456789": http.StatusNotFound, "alice-admin-0123456789": http.StatusOK} {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s on the admin key's session: %d, want %d", token, resp.StatusCode, want)
		}
	}
}

// TestKeysChangeAtReload: a key removed from the config stops working at
// the reload, sessions included; a new one works at once.
func TestKeysChangeAtReload(t *testing.T) {
	h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	connect := func(token string) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "reload"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: authClient(token)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}
	alice, err := connect("alice-key-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	carol := keyFor("carol", "carol-key-0123456789", nil, nil)
	next := Config{Listen: listener.Config{Auth: &auth.Config{Keys: []auth.Key{testAuth.Keys[1], carol}}}, Servers: []upstream.ServerConfig{stdioServer("a")}}
	if err := h.Reconfigure(ctx, next, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.ListTools(ctx, nil); err == nil {
		t.Error("alice's session still works after her key was removed")
	}
	if cs, err := connect("alice-key-0123456789"); err == nil {
		cs.Close()
		t.Error("alice's removed key opened a session")
	}
	cs, err := connect("carol-key-0123456789")
	if err != nil {
		t.Fatalf("carol's new key: %v", err)
	}
	cs.Close()
}
