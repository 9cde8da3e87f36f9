package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/internal/bench"
)

// measureProfile serves a config with gatewayprof (mcphost's config
// decoder, plugin manager and host in one binary, writing a CPU profile),
// loads it for -profile-time, and keeps `go tool pprof -top` of the result:
// tools/call at the highest concurrency with no plugins and with the
// quickstart chain, then cached tools/list of the many-tools config.
func (h *harness) measureProfile(ctx context.Context) error {
	everything := []server{{name: "everything", transport: "stdio", command: []string{h.bins.everything}}}
	var many []server
	for i := range h.o.upstreams {
		name := "s" + strconv.Itoa(i)
		many = append(many, server{name: name, transport: "stdio",
			command: []string{h.bins.manytools, "-tools", strconv.Itoa(h.o.toolsEach), "-name", name}})
	}
	conc := h.o.concurrency[len(h.o.concurrency)-1]
	type profRun struct {
		name, load, suffix, plugins string
		servers                     []server
	}
	runs := []profRun{{"tools/call, no plugins", "call", "", "", everything}}
	if h.chain != "" {
		runs = append(runs, profRun{"tools/call, quickstart chain", "call", "-chain", h.chain, everything})
	}
	runs = append(runs, profRun{fmt.Sprintf("cached tools/list of %d tools, no plugins", h.o.upstreams*h.o.toolsEach), "list", "-list", "", many})
	for i, run := range runs {
		ext := filepath.Ext(h.o.profile)
		file := strings.TrimSuffix(h.o.profile, ext) + run.suffix + ext
		pr, err := h.profileOnce(ctx, i, run.servers, run.plugins, file, run.load, conc)
		if err != nil {
			return fmt.Errorf("%s: %w", run.name, err)
		}
		pr.Config = run.name
		h.report.Profiles = append(h.report.Profiles, *pr)
		h.logf("profile %q written to %s", run.name, file)
	}
	return nil
}

func (h *harness) profileOnce(ctx context.Context, i int, servers []server, plugins, file, load string, conc int) (*Profile, error) {
	addr, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	cfg, err := h.mcphostConfig(fmt.Sprintf("profile-%d.hcl", i), addr, filepath.Join(h.work, "cache-profile"), servers, plugins)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, err
	}
	p, err := h.start(h.bins.gatewayprof, []string{"-config", cfg, "-http", addr, "-cpuprofile", abs}, h.o.env...)
	if err != nil {
		return nil, err
	}
	defer h.stop(p)
	g, err := h.awaitServing(ctx, p, addr, len(servers))
	if err != nil {
		return nil, err
	}
	pr := &Profile{File: file, Duration: h.o.profileTime}
	switch load {
	case "call":
		target := bench.Target{Transport: bench.TransportStreamable, URL: g.url, ProtocolVersion: protocolVersion}
		cs, err := target.Connect(ctx)
		if err != nil {
			return nil, err
		}
		tool, err := resolveTool(ctx, cs, h.o.tool)
		var res *bench.Result
		if err == nil {
			res, err = bench.Run(ctx, cs, bench.Options{Tool: tool, Duration: h.o.profileTime, Concurrency: conc, Warmup: h.o.warmup})
		}
		cs.Close()
		if err != nil {
			return nil, err
		}
		pr.Load = fmt.Sprintf("tools/call at c=%d", conc)
		pr.Calls, pr.CallsPerSec = res.Calls, res.CallsPerSec
	case "list":
		raw, err := bench.DialRaw(ctx, g.url, protocolVersion, nil)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		for time.Since(start) < h.o.profileTime {
			if _, err := raw.ListTools(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			pr.Calls++
		}
		raw.Close()
		pr.Load = "tools/list in a loop, c=1"
		pr.CallsPerSec = float64(pr.Calls) / time.Since(start).Seconds()
	}
	h.stop(p) // SIGTERM: gatewayprof writes the profile
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", h.bins.gatewayprof, abs).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof: %v: %s", err, out)
	}
	cum, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=40", h.bins.gatewayprof, abs).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof: %v: %s", err, cum)
	}
	pr.Top, pr.TopCum = string(out), string(cum)
	return pr, nil
}
