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
	// The first signal starts a bounded shutdown; a second one ends the
	// process at once, as if mcphost did not handle signals.
	context.AfterFunc(ctx, stop)
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
