// Command gatewayprof serves a config the way `mcphost run` does (the same
// config decoder, plugin runtime, manager and host) and writes a CPU profile
// of the whole run, from start to SIGTERM. The comparison runs it under load
// with -profile, since the mcphost binary itself has no profiling switch.
//
// builtin: sources resolve to the policies embedded from filters/, as in
// the mcphost binary.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/internal/gctune"
	"github.com/mcphost-project/mcphost/plugins"
)

func main() {
	cfgPath := flag.String("config", "", "config file")
	addr := flag.String("http", "127.0.0.1:0", "listen address")
	out := flag.String("cpuprofile", "cpu.pprof", "CPU profile file, written at SIGTERM")
	memOut := flag.String("memprofile", "", "also write a heap profile (allocations since start, and what is live) to this file at SIGTERM, and on SIGUSR1 (with the sessions still open)")
	memRate := flag.Int("memprofilerate", 0, "runtime.MemProfileRate for -memprofile (1: every allocation; 0: the runtime's default)")
	flag.Parse()
	if *memRate > 0 {
		runtime.MemProfileRate = *memRate
	}
	if err := run(*cfgPath, *addr, *out, *memOut); err != nil {
		fmt.Fprintln(os.Stderr, "gatewayprof:", err)
		os.Exit(1)
	}
}

func run(cfgPath, addr, out, memOut string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if memOut != "" {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		defer signal.Stop(usr1)
		go func() {
			for range usr1 {
				if err := writeHeapProfile(memOut); err != nil {
					fmt.Fprintln(os.Stderr, "gatewayprof: heap profile:", err)
				}
			}
		}()
	}
	file, diags := config.Load(cfgPath)
	if diags.HasErrors() {
		return diags.Err()
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "gatewayprof", Level: hclog.Info, Output: os.Stderr})
	// The collector is paced as `mcphost run` paces it.
	gc := gctune.Start()
	defer gc.Stop()
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: file.Runtime.CacheDir, Logger: log.Named("plugins"), Builtin: filters.Builtin})
	if err != nil {
		return err
	}
	defer rt.Close(context.Background())
	mgr, err := plugins.NewManager(rt, nil)
	if err != nil {
		return err
	}
	defer mgr.Close(context.Background())
	if err := mgr.Reload(ctx, file.Plugins); err != nil {
		return err
	}
	gc.Adjust()
	h, err := gateway.New(file.Host, &gateway.Options{Logger: log, Policy: mgr})
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.Start(ctx); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	// Write the profile as soon as the signal comes: the graceful HTTP
	// shutdown after it may outlast the caller's patience.
	written := make(chan struct{})
	go func() {
		<-ctx.Done()
		pprof.StopCPUProfile()
		f.Close()
		log.Info("profile written", "file", out)
		if memOut != "" {
			if err := writeHeapProfile(memOut); err != nil {
				log.Error("heap profile", "error", err)
			}
		}
		close(written)
	}()
	err = h.ListenAndServe(ctx, addr, func(a net.Addr) {
		log.Info("serving", "mcp", fmt.Sprintf("http://%s/mcp", a))
	})
	stop()
	<-written
	return err
}

// writeHeapProfile writes the heap profile, after a collection so that its
// in-use figures are the live heap.
func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
