package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/host"
	"github.com/mcphost-project/mcphost/internal/config"
	"github.com/mcphost-project/mcphost/plugins"
)

// engine is a host with its plugin runtime and policy chain: what every
// command that talks to upstreams needs.
type engine struct {
	log  hclog.Logger
	rt   *plugins.Runtime
	mgr  *plugins.Manager
	host *host.Host
}

// startEngine compiles the plugins, builds the host and connects every
// upstream. Clean-up runs on failure too.
func startEngine(ctx context.Context, file *config.File, log hclog.Logger, watch bool) (e *engine, err error) {
	e = &engine{log: log}
	defer func() {
		if err != nil {
			e.close()
			e = nil
		}
	}()
	e.rt, err = plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: file.Runtime.CacheDir, Logger: log.Named("plugins"), Builtin: builtinPolicy, BuiltinNames: builtinNames})
	if err != nil {
		return e, fmt.Errorf("starting the plugin runtime: %w", err)
	}
	// The manager exists before the host it notifies, so OnSwap reads e.host late.
	e.mgr, err = plugins.NewManager(e.rt, &plugins.ManagerOptions{Watch: watch, OnSwap: func() {
		if e.host != nil {
			e.host.NotifyPolicyChanged()
		}
	}, OnReload: func(err error) {
		if e.host != nil {
			e.host.NoteReload("plugin files", err)
		}
	}, BeforeSwap: func(ctx context.Context, next *plugins.Chain) {
		if e.host != nil {
			e.host.PrepareViews(ctx, next)
		}
	}})
	if err != nil {
		return e, fmt.Errorf("starting the plugin manager: %w", err)
	}
	start := time.Now()
	if err := e.mgr.Reload(ctx, file.Plugins); err != nil {
		return e, fmt.Errorf("loading plugins: %w", err)
	}
	if len(file.Plugins) > 0 {
		log.Info("plugins loaded", "count", len(file.Plugins), "took", time.Since(start).Round(time.Millisecond))
		// Compiling, or reading compiled code from the cache, leaves tens
		// to hundreds of MB of garbage that the runtime would hand back to
		// the OS only over minutes. Hand it back now, off the start-up path.
		go debug.FreeOSMemory()
	}
	e.host, err = host.New(file.Host, &host.Options{Logger: log, Policy: e.mgr, PolicyStatus: func() any { return e.mgr.Status() }})
	if err != nil {
		return e, err
	}
	if err := e.host.Start(ctx); err != nil {
		return e, err
	}
	return e, nil
}

// shutdownDrain bounds how long closing waits for plugin calls still in
// flight once the servers have stopped (HTTP has its own grace period).
// Then the runtime stops the guests (plugins.Runtime.Close): shutdown never
// waits on a guest past this, whatever the plugins' timeouts.
const shutdownDrain = 2 * time.Second

func (e *engine) close() error {
	var errs []error
	if e.host != nil {
		errs = append(errs, e.host.Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownDrain)
	defer cancel()
	if e.mgr != nil {
		errs = append(errs, e.mgr.Close(ctx))
	}
	if e.rt != nil {
		errs = append(errs, e.rt.Close(ctx))
	}
	return errors.Join(errs...)
}

// logStatuses reports each upstream's state once it settled after start.
func (e *engine) logStatuses() {
	for _, st := range e.host.Statuses() {
		if st.State == host.StateConnected {
			e.log.Info("upstream ready", "server", st.Name, "transport", st.Transport, "tools", st.Tools)
		} else {
			e.log.Error("upstream not ready; retrying in the background", "server", st.Name, "state", st.State, "error", st.Error)
		}
	}
}
