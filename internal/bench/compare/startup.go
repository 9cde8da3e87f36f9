package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/mcphost-project/mcphost/internal/bench"
)

// Start-up configurations.
const (
	startPlain     = "no plugins"
	startChainCold = "quickstart chain, cold compile cache"
	startChainWarm = "quickstart chain, warm compile cache"
)

// measureStartup times `mcphost run` from exec to its "serving" line (which
// it logs once every upstream connected or failed, and the listener is
// bound; a failed upstream fails the measurement) and reads the idle RSS
// after one tools/list and one call.
func (h *harness) measureStartup(ctx context.Context) error {
	servers := []server{{name: "everything", transport: "stdio", command: []string{h.bins.everything}}}
	configs := []string{startPlain}
	warmCache := filepath.Join(h.work, "cache-warm")
	if h.chain != "" {
		configs = append(configs, startChainCold, startChainWarm)
		// Fill the warm cache once, unmeasured.
		g, err := h.startMcphost(ctx, "startup-prime", warmCache, servers, h.chain)
		if err != nil {
			h.note("start-up with the quickstart chain skipped: %v", firstLine(err))
			configs = configs[:1]
		} else {
			h.stop(g.proc)
		}
	}
	r := &h.report
	samples := map[string][]StartSample{}
	for round := range h.o.startRounds {
		for k := range configs {
			name := configs[(k+round)%len(configs)]
			cache, plugins := filepath.Join(h.work, "cache-plain"), ""
			switch name {
			case startChainCold:
				cache, plugins = filepath.Join(h.work, fmt.Sprintf("cache-cold-%d", round)), h.chain
			case startChainWarm:
				cache, plugins = warmCache, h.chain
			}
			s, err := h.startOnce(ctx, cache, servers, plugins)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				h.note("start-up %q round %d failed: %v", name, round+1, firstLine(err))
				continue
			}
			samples[name] = append(samples[name], s)
			if name == startChainCold {
				_ = os.RemoveAll(cache)
			}
		}
		h.logf("startup: round %d/%d done (load %s)", round+1, h.o.startRounds, loadavg())
	}
	for _, name := range configs {
		r.Startup = append(r.Startup, StartupSummary{Config: name, Samples: samples[name]})
	}
	return nil
}

func (h *harness) startOnce(ctx context.Context, cache string, servers []server, plugins string) (StartSample, error) {
	g, err := h.startMcphost(ctx, "startup", cache, servers, plugins)
	if err != nil {
		return StartSample{}, err
	}
	defer h.stop(g.proc)
	s := StartSample{Ready: g.ready, PluginLoad: pluginLoadTime(g.proc.Tail(200))}
	// The HTTP listener answering is part of ready; check it does.
	if _, err := g.proc.WaitHTTP(ctx, 10*time.Second, g.url[:len(g.url)-len("/mcp")]+"/healthz"); err != nil {
		return s, err
	}
	target := bench.Target{Transport: bench.TransportStreamable, URL: g.url, ProtocolVersion: protocolVersion}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := target.Connect(cctx)
	if err != nil {
		return s, err
	}
	tool, err := resolveTool(cctx, cs, h.o.tool)
	if err == nil {
		_, err = bench.Run(cctx, cs, bench.Options{Tool: tool, Calls: 1, Warmup: -1})
	}
	cs.Close()
	if err != nil {
		return s, err
	}
	select {
	case <-time.After(h.o.idleSettle):
	case <-ctx.Done():
		return s, ctx.Err()
	}
	if s.IdleRSS, err = bench.RSS(g.proc.PID()); err != nil {
		return s, err
	}
	s.IdleAnon, s.IdleFile, err = bench.RSSParts(g.proc.PID())
	return s, err
}

var pluginsLoaded = regexp.MustCompile(`plugins loaded: .*took=([0-9.]+[a-zµ]+)`)

// pluginLoadTime reads how long mcphost says loading the plugins took
// (compiling or reading the compile cache, and warming the pools).
func pluginLoadTime(log string) time.Duration {
	m := pluginsLoaded.FindStringSubmatch(log)
	if m == nil {
		return 0
	}
	d, _ := time.ParseDuration(m[1])
	return d
}
