// Command clock is a small upstream MCP server for trying mcphost: it tells the
// time in any zone, converts times between zones, adds durations and counts
// the days between dates. Every tool is read-only and has input and output
// schemas, so a gateway's catalog, renaming and policies have something real
// to work on.
//
// It speaks MCP over stdin and stdout, logs only to stderr, and exits cleanly
// when stdin reaches end of file:
//
//	go run ./examples/servers/clock
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "clock:", err)
		os.Exit(1)
	}
}

// run serves the clock tools over stdin and stdout until stdin ends or ctx is
// cancelled. Both of those are a clean exit.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "log protocol activity to stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: clock [-v]\n\nServes MCP time tools over stdio.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	server := newServer(time.Now, logger)
	// Closing stdin (when it can be closed) is what unblocks the reader on a
	// signal; stdout stays open for whoever else writes to it.
	in, ok := stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(stdin)
	}
	t := &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{stdout}}
	err := server.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// nopWriteCloser keeps the transport from closing the process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
