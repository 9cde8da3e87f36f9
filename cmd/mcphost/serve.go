package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host/admin"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/internal/gctune"
	"github.com/mcphost-project/mcphost/internal/startpages"
)

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "usage: mcphost run CONFIG [--http ADDR] [--stdio] [--no-watch] [--log-level LEVEL] [--log-format json]", stdout, stderr)
	httpAddr := fs.String("http", "", "serve streamable HTTP (/mcp) and SSE (/sse) on this address (overrides listen.http)")
	stdio := fs.Bool("stdio", false, "serve one client on stdin/stdout instead of HTTP (logs go to stderr)")
	noWatch := fs.Bool("no-watch", false, "do not reload when the config or plugin files change (SIGHUP still reloads)")
	var lf logFlags
	lf.register(fs.FlagSet, "info")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.misuse()
	}
	log, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	file, err := loadConfig(pos[0], stderr)
	if err != nil {
		return err
	}
	if *stdio && file.Audit != nil && file.Audit.File == audit.Stdout {
		fmt.Fprintln(stderr, `mcphost run: --stdio speaks MCP on stdout, where audit { file = "-" } would write the audit lines too; write them to a file instead`)
		return exitError(2)
	}
	watch := file.Runtime.Watch && !*noWatch
	fitConnectionsToFiles(file, log)

	// ctx, from here, is the serving's: it ends after the drain that the
	// signal (sigCtx ending) starts, not at the signal.
	sigCtx := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(sigCtx))
	defer cancel()
	started := time.Now()
	// GC pacing by headroom (internal/gctune): unless GOGC is set, a
	// small live heap gets GOGC up to 400, a large one 100.
	gc := gctune.Start()
	defer gc.Stop()
	// The HTTP address is tried first: taken or malformed, it fails now,
	// before any server process starts. It is bound for good once the
	// engine is ready: until then a connection is refused, so a load
	// balancer passes over this replica, rather than accepted and left
	// unanswered through the start.
	addr := *httpAddr
	if addr == "" {
		addr = file.Host.Listen.HTTP
	}
	if addr == "" {
		addr = listener.DefaultListenHTTP
	}
	if !*stdio {
		probe, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("serving HTTP on %s: %w (set listen.http in %s, or pass --http ADDR)", addr, err, pos[0])
		}
		probe.Close()
	}
	stopStarting := context.AfterFunc(sigCtx, cancel) // a signal during the start ends it
	e, err := startEngine(ctx, file, log, watch)
	stopStarting()
	if err != nil {
		return err
	}
	gc.Adjust()
	if *stdio {
		context.AfterFunc(sigCtx, cancel)
	} else {
		// SIGTERM: /healthz fails and new sessions are refused while the
		// requests in flight finish, within listen.drain_timeout; then
		// the server stops.
		drain := file.Host.Listen.DrainTimeout
		if drain <= 0 {
			drain = listener.DefaultDrainTimeout
		}
		context.AfterFunc(sigCtx, func() {
			defer cancel()
			dctx, dcancel := context.WithTimeout(context.Background(), drain)
			defer dcancel()
			start := time.Now()
			if err := e.Host().Drain(dctx); err == nil {
				log.Info("drained", "took", time.Since(start).Round(time.Millisecond))
			}
		})
	}
	// Shutdown never waits on a guest: shutdownDrain after the signal, the
	// plugin calls still running are stopped, whatever their timeouts, so
	// the requests waiting on them end while HTTP drains.
	context.AfterFunc(ctx, func() { time.AfterFunc(engine.ShutdownDrain, e.Halt) })
	defer func() {
		log.Info("shutting down")
		if err := e.Close(); err != nil {
			log.Warn("shutdown", "error", err)
		}
	}()
	logStatuses(e, log)

	r := &reloader{path: pos[0], file: file, engine: e, log: log}
	go r.run(ctx, watch)

	if file.Admin != nil {
		ln, err := net.Listen("tcp", file.Admin.HTTP)
		if err != nil {
			return fmt.Errorf("admin API: listening on %s: %w", file.Admin.HTTP, err)
		}
		log.Info("admin API", "url", fmt.Sprintf("http://%s/v1/servers", ln.Addr()), "store", storeSummary(file.Store))
		adminDone := make(chan struct{})
		go func() {
			defer close(adminDone)
			if err := admin.Serve(ctx, ln, admin.Handler(e, log.Named("admin")), file.Admin.MaxConnections, log.Named("admin")); err != nil {
				log.Error("admin API stopped", "error", err)
			}
		}()
		// Runs before the engine closes (defers run last first): the
		// admin requests end with ctx, and Serve's shutdown is bounded.
		defer func() {
			cancel()
			select {
			case <-adminDone:
			case <-time.After(adminShutdown):
				log.Warn("the admin API did not stop in time; closing the engine under it")
			}
		}()
	}

	if *stdio {
		log.Info("serving on stdio", "ready_in", time.Since(started).Round(time.Millisecond))
		releaseStartPages(log)
		in, out := readCloser(stdin), writeCloser(stdout)
		return e.Host().ServeStdio(ctx, in, out)
	}
	err = e.Host().ListenAndServe(ctx, addr, func(a net.Addr) {
		scheme := "http"
		if file.Host.Listen.TLSCert != "" {
			scheme = "https"
		}
		log.Info("serving", "mcp", fmt.Sprintf("%s://%s/mcp", scheme, a), "sse", fmt.Sprintf("%s://%s/sse", scheme, a),
			"auth", authSummary(file.Host.Listen), "ready_in", time.Since(started).Round(time.Millisecond))
		releaseStartPages(log)
	})
	if err != nil {
		return fmt.Errorf("serving HTTP on %s: %w", addr, err)
	}
	return nil
}

// releaseStartPages unmaps the binary's pages that the start-up mapped
// (internal/startpages): those serving uses come back as it uses them.
func releaseStartPages(log hclog.Logger) {
	n, err := startpages.Release()
	if err != nil {
		log.Warn("could not release the start-up's pages of the binary", "error", err)
		return
	}
	if n > 0 {
		log.Debug("released the start-up's pages of the binary", "mapped_bytes", n)
	}
}

// adminShutdown bounds the wait for the admin API to stop (admin.Serve
// gives its requests 5 s) before the engine closes.
const adminShutdown = 6 * time.Second

// reloader applies config changes: on SIGHUP, and when the config file
// changes if watching. A config with errors changes nothing.
type reloader struct {
	path   string
	file   *config.File
	engine *engine.Engine
	log    hclog.Logger
}

func (r *reloader) run(ctx context.Context, watch bool) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var changed <-chan struct{}
	if watch {
		w, err := watchFiles(ctx, r.file.Sources, r.file.Runtime.WatchSettle, r.log)
		if err != nil {
			r.log.Warn("cannot watch the config file; SIGHUP still reloads", "error", err)
		} else {
			changed = w
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.log.Info("SIGHUP: reloading")
		case <-changed:
			r.log.Info("config changed: reloading", "path", r.path)
		}
		r.reload(ctx)
	}
}

func (r *reloader) reload(ctx context.Context) {
	file, diags := config.Load(r.path)
	if diags.HasErrors() {
		r.log.Error("reload refused: the config has errors; the running config stays", "path", r.path, "error", diags.Err())
		r.engine.Host().NoteReload("config", diags.Err())
		return
	}
	if err := r.engine.Reload(ctx, file); err != nil {
		r.log.Error("reload refused; the running config stays", "error", err)
		return
	}
	r.file = file
	r.log.Info("reloaded", "servers", len(file.Host.Servers), "plugins", len(file.Plugins))
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func writeCloser(w io.Writer) io.WriteCloser {
	if wc, ok := w.(io.WriteCloser); ok {
		return wc
	}
	return nopWriteCloser{w}
}

// authSummary says how the HTTP endpoint authenticates, for the log.
func authSummary(l listener.Config) string {
	var ways []string
	keys := 0
	if l.Auth != nil {
		keys = len(l.Auth.Keys)
	}
	if l.AuthToken != "" {
		keys++
	}
	if keys > 0 {
		ways = append(ways, plural(keys, "key"))
	}
	if l.Auth != nil && l.Auth.OAuth != nil {
		ways = append(ways, "oauth "+l.Auth.OAuth.Issuer)
	}
	if len(ways) == 0 {
		return "none"
	}
	return strings.Join(ways, ", ")
}

// storeSummary names the store for the start-up log, without a password.
func storeSummary(s *config.Store) string {
	if s == nil {
		return "none"
	}
	return store.Describe(s.Driver, s.DSN)
}
