package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// TestOptionalListMethodNotFound serves an upstream that has prompts and
// resources but answers one optional list (resources/templates/list,
// prompts/list...) with -32601: that list is empty and the others are
// kept.
func TestOptionalListMethodNotFound(t *testing.T) {
	for _, missing := range []string{"resources/templates/list", "prompts/list", "resources/list"} {
		t.Run(missing, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "partial", Version: "1"}, nil)
			mcp.AddTool(srv, &mcp.Tool{Name: "t"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
			srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
			srv.AddResource(&mcp.Resource{Name: "readme", URI: "file:///readme"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
			srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "doc", URITemplate: "file:///docs/{name}"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
			srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == missing {
						return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
					}
					return next(ctx, method, req)
				}
			})
			up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
			t.Cleanup(up.Close)

			h := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "p", Transport: upstream.TransportStreamableHTTP, URL: up.URL}}}, nil)
			cs := connectHTTP(t, h, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			prompts, err := cs.ListPrompts(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			resources, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			templates, err := cs.ListResourceTemplates(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{"prompts/list": 1, "resources/list": 1, "resources/templates/list": 1}
			want[missing] = 0
			got := map[string]int{"prompts/list": len(prompts.Prompts), "resources/list": len(resources.Resources), "resources/templates/list": len(templates.ResourceTemplates)}
			for m, n := range want {
				if got[m] != n {
					t.Errorf("%s lists %d, want %d (the upstream answers %s with -32601)", m, got[m], n, missing)
				}
			}
		})
	}
}
