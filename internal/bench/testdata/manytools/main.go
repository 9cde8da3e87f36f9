// Command manytools is an MCP server with many tools, for measuring
// tools/list through a gateway. It serves over stdio, or streamable HTTP
// with -http. Its "bump" tool adds or removes one tool, so the server sends
// notifications/tools/list_changed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	n := flag.Int("tools", 100, "number of tools besides bump")
	name := flag.String("name", "many", "server name, also in tool descriptions")
	httpAddr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()

	srv := mcp.NewServer(&mcp.Implementation{Name: *name, Version: "1.0.0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for."},"limit":{"type":"integer","minimum":1,"maximum":100,"description":"How many results at most."}},"required":["query"]}`)
	for i := range *n {
		tool := &mcp.Tool{
			Name:        fmt.Sprintf("tool_%04d", i),
			Title:       fmt.Sprintf("Tool %d of %s", i, *name),
			Description: fmt.Sprintf("Tool number %d of the %s server. It searches the %s index for the query and returns at most limit matching records, newest first.", i, *name, *name),
			InputSchema: schema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: i%2 == 0},
		}
		srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tool.Name}}}, nil
		})
	}
	var mu sync.Mutex
	extra := false
	srv.AddTool(&mcp.Tool{Name: "bump", Description: "Adds or removes the tool named extra.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			extra = !extra
			if extra {
				srv.AddTool(&mcp.Tool{Name: "extra", Description: "Appears and disappears.", InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "extra"}}}, nil
					})
			} else {
				srv.RemoveTools("extra")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(extra)}}}, nil
		})

	if *httpAddr == "" {
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	log.Fatal(http.Serve(ln, h))
}
