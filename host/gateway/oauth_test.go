package gateway

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// protectedServer is a real MCP server behind OAuth: mcphost's own
// resource-server middleware, trusting as, in front of a go-sdk server
// with an echo tool. It returns the server's /mcp URL.
func protectedServer(t *testing.T, as *authtest.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	a, err := auth.New(auth.Config{OAuth: &auth.OAuth{Issuer: as.URL, Audience: url}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says who the token names."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: auth.FromContext(ctx).String()}}}, nil, nil
	})
	hs := httptest.NewUnstartedServer(a.Middleware(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	return url
}

// TestUpstreamClientCredentials: mcphost reaches a server behind OAuth with
// the client_credentials grant, discovering the authorization server from
// the server's 401; a wrong secret leaves the server failed with a reason
// that does not show the secret.
func TestUpstreamClientCredentials(t *testing.T) {
	as := authtest.New(t)
	url := protectedServer(t, as)
	as.AddClient("mcphost", authtest.Client{Secret: "right-secret-0123", Subject: "svc:mcphost", Audience: url})

	h := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "p", Transport: upstream.TransportStreamableHTTP, URL: url,
		OAuth: &upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "mcphost", ClientSecret: "right-secret-0123"}}}}, nil)
	got, isErr := callText(t, connectHTTP(t, h, nil), "p__whoami", nil)
	if isErr || !strings.Contains(got, "svc:mcphost") {
		t.Fatalf("p__whoami = %q (isError %v)", got, isErr)
	}

	bad := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "p", Transport: upstream.TransportStreamableHTTP, URL: url, ConnectTimeout: 5 * time.Second,
		OAuth: &upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "mcphost", ClientSecret: "wrong-secret-0123"}}}}, nil)
	testproc.WaitFor(t, "the server to fail", 15*time.Second, func() bool {
		return bad.Statuses()[0].State == upstream.StateFailed
	})
	st := bad.Statuses()[0]
	if st.Error == "" || strings.Contains(st.Error, "wrong-secret") {
		t.Errorf("status error %q", st.Error)
	}
	t.Logf("failed as: %s", st.Error)
}

// TestUpstreamOAuthValidate: Config.Validate refuses an oauth block the
// handler could not be made from, saying why.
func TestUpstreamOAuthValidate(t *testing.T) {
	for _, tc := range []struct {
		o    *upstream.UpstreamOAuth
		want string
	}{
		{&upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "a"}, "needs client_id and client_secret"},
		{&upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientSecret: "b"}, "needs client_id and client_secret"},
		{&upstream.UpstreamOAuth{Mode: "everyone"}, "not supported"},
		{&upstream.UpstreamOAuth{RedirectURL: "ftp://x"}, "redirect_url"},
		{&upstream.UpstreamOAuth{Grant: "authorization_code", ClientID: "a", ClientSecret: "b"}, "not supported"},
	} {
		err := Config{Servers: []upstream.ServerConfig{{Name: "s", Transport: upstream.TransportStreamableHTTP, URL: "https://x.example/mcp", OAuth: tc.o}}}.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.o, err, tc.want)
		}
	}
	shared := Config{Servers: []upstream.ServerConfig{{Name: "s", Transport: upstream.TransportStreamableHTTP, URL: "https://x.example/mcp", Sessions: upstream.SessionsShared,
		OAuth: &upstream.UpstreamOAuth{Mode: upstream.OAuthPerUser}}}}.WithDefaults().Validate()
	if shared == nil || !strings.Contains(shared.Error(), `remove sessions = "shared"`) {
		t.Errorf("per_user on a shared session: %v", shared)
	}
	perUser := Config{Servers: []upstream.ServerConfig{{Name: "s", Transport: upstream.TransportStreamableHTTP, URL: "https://x.example/mcp",
		OAuth: &upstream.UpstreamOAuth{Mode: upstream.OAuthPerUser}}}}.WithDefaults()
	if err := perUser.Validate(); err != nil || perUser.Servers[0].Sessions != upstream.SessionsPerClient {
		t.Errorf("per_user: %v, sessions %q", err, perUser.Servers[0].Sessions)
	}
	sse := Config{Servers: []upstream.ServerConfig{{Name: "s", Transport: upstream.TransportSSE, URL: "https://x.example/sse",
		OAuth: &upstream.UpstreamOAuth{Grant: upstream.GrantClientCredentials, ClientID: "a", ClientSecret: "b"}}}}.WithDefaults().Validate()
	if sse == nil || !strings.Contains(sse.Error(), "streamable-http") {
		t.Errorf("oauth on sse: %v", sse)
	}
}
