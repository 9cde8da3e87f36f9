// Command notes is a small upstream MCP server for trying mcphost: a notes
// store in a directory, with tools that read and tools that write (one of
// them destructive), every note also served as a resource notes://NAME, and
// a prompt that asks for a summary of the notes. It gives a gateway's
// policies, resource and prompt pass-through something real to work on.
//
// It speaks MCP over stdin and stdout, logs only to stderr, and exits cleanly
// when stdin reaches end of file:
//
//	go run ./examples/servers/notes -dir /tmp/my-notes
//
// The directory comes from -dir, else $NOTES_DIR, else mcphost-notes under the
// system's temporary directory. Each note is a file NAME.md in it.
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
	"path/filepath"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "notes:", err)
		os.Exit(1)
	}
}

// run serves the notes in a directory over stdin and stdout until stdin ends
// or ctx is cancelled. Both of those are a clean exit.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("notes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", defaultDir(), "directory holding the notes, created if missing (env NOTES_DIR)")
	verbose := fs.Bool("v", false, "log protocol activity to stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: notes [-dir DIR] [-v]\n\nServes a directory of notes over MCP on stdio.")
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

	store, err := openStore(*dir)
	if err != nil {
		return err
	}
	logger.Info("serving notes", "dir", store.dir)
	server := newServer(store, logger)

	// Closing stdin (when it can be closed) is what unblocks the reader on a
	// signal; stdout stays open for whoever else writes to it.
	in, ok := stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(stdin)
	}
	err = server.Run(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{stdout}})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func defaultDir() string {
	if d := os.Getenv("NOTES_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "mcphost-notes")
}

// nopWriteCloser keeps the transport from closing the process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
