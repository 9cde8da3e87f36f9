package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/plugins"
)

// demoServer is an upstream MCP server over streamable HTTP with one tool,
// echo, standing in for a real one.
func demoServer() *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "demo", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes text."}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	return httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
}

// text is the first text block of a result.
func text(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }

// Embed mcphost with a built-in policy chain, from a configuration built in
// Go (config.Load reads the same from an HCL file), and call a tool.
func Example() {
	up := demoServer()
	defer up.Close()
	ctx := context.Background()

	file := &config.File{
		Host: gateway.Config{Servers: []upstream.ServerConfig{
			{Name: "demo", Transport: upstream.TransportStreamableHTTP, URL: up.URL},
		}},
		Plugins: []plugins.Spec{{Name: "redact", Source: "builtin:redact"}},
	}
	e, err := engine.Start(ctx, file, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	args, _ := json.Marshal(map[string]string{"text": "token ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXYZ"})
	res, err := e.Host().CallTool(ctx, abi.Caller{ClientName: "example"}, "demo__echo", args)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text(res))
	// Output: token [REDACTED:github_token]
}

// Swap the policy chain of a running engine: calls in flight finish on the
// chain they started with, and the next call meets the new one.
func ExampleEngine_Reload() {
	up := demoServer()
	defer up.Close()
	ctx := context.Background()
	servers := []upstream.ServerConfig{{Name: "demo", Transport: upstream.TransportStreamableHTTP, URL: up.URL}}

	e, err := engine.Start(ctx, &config.File{Host: gateway.Config{Servers: servers}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	call := func() {
		res, err := e.Host().CallTool(ctx, abi.Caller{}, "demo__echo", json.RawMessage(`{"text":"hello"}`))
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(text(res))
	}
	call()

	err = e.Reload(ctx, &config.File{
		Host:    gateway.Config{Servers: servers},
		Plugins: []plugins.Spec{{Name: "no-echo", Source: "builtin:deny", Config: map[string]string{"tools": `["demo__echo"]`}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	call()
	// Output:
	// hello
	// call to demo__echo denied: policy "no-echo": demo__echo is blocked by the gateway's deny policy (tools pattern "demo__echo")
}
