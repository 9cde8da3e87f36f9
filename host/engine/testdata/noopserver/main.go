// Command noopserver is a minimal native go-sdk MCP server with one no-op
// tool over streamable HTTP: the baseline of the tool plugin benchmark.
package main

import (
	"context"
	"flag"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "127.0.0.1:0", "listen address")
	flag.Parse()
	srv := mcp.NewServer(&mcp.Implementation{Name: "native", Version: "1"}, nil)
	type empty struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "noop", Description: "Does nothing."}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, empty, error) {
		return nil, empty{}, nil
	})
	log.Fatal(http.ListenAndServe(*addr, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
}
