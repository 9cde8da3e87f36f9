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

	"github.com/mcphost-project/mcphost/host/upstream/process"
)

func main() {
	stampVersion()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal starts a bounded shutdown; a second one ends the
	// process at once, as if mcphost did not handle signals.
	context.AfterFunc(ctx, stop)
	// A long-running gateway adopts what its upstreams orphan, so that no
	// descendant of an upstream outlives mcphost (host.Subreaper). Only
	// here: it is a property of the whole process, and reaping its orphans
	// must not race an embedder's own children.
	var sr *process.Subreaper
	if len(os.Args) > 1 && os.Args[1] == "run" {
		var err error
		if sr, err = process.BecomeSubreaper(); err != nil {
			fmt.Fprintln(os.Stderr, "mcphost: warning:", err, "(descendants of upstreams that leave their process group may outlive mcphost)")
		}
	}
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if sr != nil {
		sr.Close()
	}
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(int(ee))
		}
		fmt.Fprintln(os.Stderr, "mcphost:", err)
		os.Exit(1)
	}
}
