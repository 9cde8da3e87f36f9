package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// An upstream URL's credentials never reach a client through mcphost's own
// errors: a call to a server that went away quotes its URL, masked.
func TestUpstreamURLSecretsNotInClientErrors(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "t"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	h := startHost(t, Config{Servers: []upstream.ServerConfig{{
		Name: "p", Transport: upstream.TransportStreamableHTTP, URL: up.URL + "/mcp?token=TOKENSECRET123&api_key=KEYSECRET456",
	}}}, nil)
	cs := connectHTTP(t, h, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 1 {
		t.Fatalf("tools: %v %v", lt, err)
	}
	up.CloseClientConnections()
	up.Close()

	var seen []string
	for range 3 { // the first call may meet the closed connection, later ones the failed dial
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: lt.Tools[0].Name})
		if err != nil {
			seen = append(seen, err.Error())
			continue
		}
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				seen = append(seen, tc.Text)
			}
		}
	}
	for _, st := range h.Statuses() {
		seen = append(seen, st.Error)
	}
	all := strings.Join(seen, "\n")
	for _, secret := range []string{"TOKENSECRET123", "KEYSECRET456"} {
		if strings.Contains(all, secret) {
			t.Errorf("a client or the status sees %s:\n%s", secret, all)
		}
	}
	if !strings.Contains(all, "token=xxxxx") {
		t.Errorf("no error quotes the masked URL (the test would prove nothing):\n%s", all)
	}
}
