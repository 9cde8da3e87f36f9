// Command mcphost is a WebAssembly plugin host for MCP tools: it serves the
// tools of many upstream MCP servers as one MCP server, with policies that
// run as sandboxed Wasm plugins. Run `mcphost help` for usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(int(ee))
		}
		fmt.Fprintln(os.Stderr, "mcphost:", err)
		os.Exit(1)
	}
}
