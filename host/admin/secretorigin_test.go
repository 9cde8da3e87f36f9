package admin_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/config"
)

// TestKeptSecretsStayWithTheirHost: a header stored with a server is not
// carried to another host. An admin who points the server's url at a
// listener of theirs, sending the header back masked, is refused (422
// naming the header) and that listener gets nothing; another path on the
// same host keeps the header; the header sent again goes to the new host,
// which never sees the old value. Both hosts are real MCP servers on
// loopback that record the header of every request.
func TestKeptSecretsStayWithTheirHost(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	const secret = "k3pt-s3cret-0123456789"
	home, homeSeen := headerServer(t, "X-Api-Key")
	other, otherSeen := headerServer(t, "X-Api-Key")

	a := r.do("POST", "/v1/servers", map[string]any{"name": "remote", "transport": "streamable-http",
		"url": home + "/mcp", "headers": map[string]string{"X-Api-Key": secret}, "connect_timeout": "10s"})
	want(t, a, http.StatusCreated)
	if a.body["status"].(map[string]any)["state"] != "connected" || !slices.Contains(homeSeen(), secret) {
		t.Fatalf("the server did not connect with its header: %s", a.raw)
	}

	// The url moved to another host (another loopback port), the header
	// left masked: by a patch, and by a whole definition.
	for _, c := range []struct {
		method string
		body   any
	}{
		{"PATCH", map[string]any{"url": other + "/mcp"}},
		{"PUT", map[string]any{"transport": "streamable-http", "url": other + "/mcp",
			"headers": map[string]string{"X-Api-Key": config.Masked}, "connect_timeout": "10s"}},
	} {
		bad := r.do(c.method, "/v1/servers/remote", c.body)
		want(t, bad, http.StatusUnprocessableEntity)
		if bytes.Contains(bad.raw, []byte(secret)) {
			t.Fatalf("%s: the refusal quotes the secret: %s", c.method, bad.raw)
		}
		errs, _ := bad.body["errors"].([]any)
		if len(errs) != 1 || errs[0].(map[string]any)["field"] != "headers.X-Api-Key" ||
			!strings.Contains(errs[0].(map[string]any)["detail"].(string), "send the value again") {
			t.Fatalf("%s: want a problem naming headers.X-Api-Key: %s", c.method, bad.problem())
		}
	}
	if g := r.do("GET", "/v1/servers/remote", nil); g.body["version"] != float64(1) || g.body["url"] != home+"/mcp" {
		t.Fatalf("a refused change was stored: %s", g.raw)
	}

	// Another path on the same host keeps the header.
	p := r.do("PATCH", "/v1/servers/remote", map[string]any{"url": home + "/v2/mcp"})
	want(t, p, http.StatusOK)
	if p.body["status"].(map[string]any)["state"] != "connected" {
		t.Fatalf("the server did not reconnect on its new path: %s", p.raw)
	}
	if s := homeSeen(); s[len(s)-1] != secret {
		t.Fatalf("on its new path the server was sent %q, want the stored header", s[len(s)-1])
	}

	// Sent again, the new value goes to the new host.
	const fresh = "fr3sh-value-for-the-other-host"
	p = r.do("PATCH", "/v1/servers/remote", map[string]any{"url": other + "/mcp", "headers": map[string]string{"X-Api-Key": fresh}})
	want(t, p, http.StatusOK)
	if p.body["status"].(map[string]any)["state"] != "connected" {
		t.Fatalf("the server did not connect to the other host: %s", p.raw)
	}
	seen := otherSeen()
	if len(seen) == 0 || slices.Contains(seen, secret) {
		t.Fatalf("the other host got headers %q; want the new value only", seen)
	}
	for _, v := range seen {
		if v != fresh {
			t.Fatalf("the other host got headers %q; want %q only", seen, fresh)
		}
	}
}

// headerServer is an MCP server over streamable HTTP, at any path, that
// records the value of header name on every request it gets.
func headerServer(t *testing.T, name string) (url string, seen func() []string) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
	type none struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var got []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get(name))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return ts.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}
