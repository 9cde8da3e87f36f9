package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/bench"
)

// measureList times a full tools/list (every page) of many tools over many
// upstreams through mcphost, with and without the quickstart chain, and
// straight from one server with as many tools for reference.
func (h *harness) measureList(ctx context.Context) error {
	n, each := h.o.upstreams, h.o.toolsEach
	var servers []server
	for i := range n {
		name := "s" + strconv.Itoa(i)
		servers = append(servers, server{name: name, transport: "stdio",
			command: []string{h.bins.manytools, "-tools", strconv.Itoa(each), "-name", name}})
	}
	r := &h.report
	r.List.Upstreams, r.List.ToolsPerUpstream = n, each

	// Reference: one go-sdk server with all the tools, no gateway.
	addr, err := bench.FreePort()
	if err != nil {
		return err
	}
	p, err := h.start(h.bins.manytools, []string{"-tools", strconv.Itoa(n * each), "-http", addr})
	if err != nil {
		return err
	}
	url := "http://" + addr + "/mcp"
	if _, err := p.WaitHTTP(ctx, 30*time.Second, url); err != nil {
		return err
	}
	s, err := h.listOnce(ctx, "direct (one go-sdk server, all tools)", url, "")
	h.stop(p)
	if err != nil {
		return err
	}
	r.List.Results = append(r.List.Results, s)

	type listConfig struct{ name, plugins, bin string }
	configs := []listConfig{{"mcphost, no plugins", "", h.bins.mcphost}}
	if h.o.mcphostB != "" {
		bin, err := filepath.Abs(h.o.mcphostB)
		if err != nil {
			return err
		}
		configs = append(configs, listConfig{"mcphost B (-mcphost-b), no plugins", "", bin})
	}
	if h.chain != "" {
		configs = append(configs, listConfig{"mcphost, quickstart chain", h.chain, h.bins.mcphost})
	}
	for i, c := range configs {
		g, err := h.startMcphostBin(ctx, c.bin, fmt.Sprintf("list-%d", i), filepath.Join(h.work, "cache-list"), servers, c.plugins)
		if err != nil {
			h.note("tools/list %q skipped: %v", c.name, firstLine(err))
			continue
		}
		s, err := h.listOnce(ctx, c.name, g.url, "s0__bump")
		h.stop(g.proc)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			h.note("tools/list %q failed: %v", c.name, firstLine(err))
			s.Error = firstLine(err)
		}
		r.List.Results = append(r.List.Results, s)
	}
	return nil
}

// listOnce lists tools repeatedly, timing a raw HTTP client (the server's
// answer, undecoded) and the go-sdk client (what a Go program waits for);
// with bump set it then calls bump (which changes an upstream's tools),
// waits for notifications/tools/list_changed on the go-sdk session and
// times the next raw list.
func (h *harness) listOnce(ctx context.Context, name, url, bump string) (ListResult, error) {
	res := ListResult{Path: name}
	changed := make(chan time.Time, 16)
	target := bench.Target{Transport: bench.TransportStreamable, URL: url, ProtocolVersion: protocolVersion}
	cs, err := target.ConnectWith(ctx, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- time.Now():
			default:
			}
		},
	})
	if err != nil {
		return res, err
	}
	defer cs.Close()
	raw, err := bench.DialRaw(ctx, url, protocolVersion, nil)
	if err != nil {
		return res, err
	}
	defer raw.Close()
	// rawList times a raw listing; count decodes it to count the tools,
	// which the timed listings skip: decoding 480 KB leaves garbage that
	// this process would collect during the next timed listing.
	rawList := func(count bool) (int, time.Duration, error) {
		t0 := time.Now()
		pages, err := raw.ListTools(ctx)
		d := time.Since(t0)
		if err != nil || !count {
			return 0, d, err
		}
		n, err := bench.CountTools(pages)
		return n, d, err
	}
	sdkList := func() (int, time.Duration, error) {
		t0 := time.Now()
		n := 0
		for _, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return 0, 0, err
			}
			n++
		}
		return n, time.Since(t0), nil
	}
	for range 3 { // warm up
		if res.Tools, _, err = rawList(true); err != nil {
			return res, err
		}
		if _, _, err = sdkList(); err != nil {
			return res, err
		}
	}
	var cached, sdk []time.Duration
	for range h.o.listRounds {
		_, d, err := rawList(false)
		if err != nil {
			return res, err
		}
		cached = append(cached, d)
	}
	for range max(h.o.listRounds/5, 3) {
		_, d, err := sdkList()
		if err != nil {
			return res, err
		}
		sdk = append(sdk, d)
	}
	res.Cached = bench.Summarize(cached)
	res.SDKCached = bench.Summarize(sdk)
	if bump == "" {
		return res, nil
	}
	var after, visible []time.Duration
	for range h.o.changeRounds {
		for len(changed) > 0 {
			<-changed
		}
		before := res.Tools
		t0 := time.Now()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: bump}); err != nil {
			return res, fmt.Errorf("calling %s: %w", bump, err)
		}
		var t1 time.Time
		select {
		case t1 = <-changed:
		case <-time.After(10 * time.Second):
			return res, errors.New("no notifications/tools/list_changed within 10s of a change upstream")
		case <-ctx.Done():
			return res, ctx.Err()
		}
		n, d, err := rawList(true)
		if err != nil {
			return res, err
		}
		if n == before {
			res.Stale++ // listed before the catalog changed
		}
		res.Tools = n
		after = append(after, d)
		visible = append(visible, t1.Add(d).Sub(t0))
		// Let the list settle before the next change.
		time.Sleep(50 * time.Millisecond)
	}
	res.AfterChange = bench.Summarize(after)
	res.ChangeVisible = bench.Summarize(visible)
	res.Changes = len(after)
	return res, nil
}
