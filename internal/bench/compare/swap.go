package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/bench"
)

// Window kinds of the hot swap section.
const (
	swapWithout = "without swaps"
	swapWith    = "with swaps"
)

// reloadTimeout bounds one swap: a reload that has not logged its new
// generation by then did not happen, and the section fails.
const reloadTimeout = 30 * time.Second

// swapRun is the mcphost under test of the hot swap section and what it
// has been told so far.
type swapRun struct {
	h       *harness
	g       *gateway
	cs      *mcp.ClientSession
	tool    string // the exposed name of the tool called, whose title changes
	servers []server
	cache   string
	config  string // the config file mcphost runs with
	seq     int    // the number in the title of the config written last
	gen     uint64 // the plugin generation mcphost logged last
}

// measureSwap runs calls at a steady rate through mcphost with the
// quickstart chain, in windows of the same length with no swaps and with
// -swaps hot swaps spread evenly, alternating, -swap-rounds times. A swap
// rewrites the config file mcphost runs with, giving one plugin (-swap-plugin,
// builtin:titles) a new config (a new title for the tool called), and
// sends SIGHUP: mcphost's own reload path. Every swap must show in
// mcphost's log as a new plugin generation and a finished reload, and the
// last title of each window must be what tools/list shows; anything else
// fails the run.
func (h *harness) measureSwap(ctx context.Context) error {
	if h.chain == "" {
		h.note("hot swap skipped: there is no quickstart chain")
		return nil
	}
	o := h.o
	s := &swapRun{
		h:       h,
		tool:    "everything__" + o.tool, // tools { prefix = "always", separator = "__" }
		servers: []server{{name: "everything", transport: "stdio", command: []string{h.bins.everything}}},
		cache:   filepath.Join(h.work, "cache-swap"),
		config:  filepath.Join(h.work, "swap.hcl"),
	}
	plugins, err := s.plugins()
	if err != nil {
		h.note("hot swap skipped: %v", err)
		return nil
	}
	g, err := h.startMcphost(ctx, "swap", s.cache, s.servers, plugins)
	if err != nil {
		return fmt.Errorf("hot swap: starting mcphost: %w", err)
	}
	defer h.stop(g.proc)
	s.g = g
	target := bench.Target{Transport: bench.TransportStreamable, URL: g.url, ProtocolVersion: protocolVersion}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	s.cs, err = target.Connect(cctx)
	if err == nil {
		var tool string
		tool, err = resolveTool(cctx, s.cs, o.tool)
		if err == nil && tool != s.tool {
			err = fmt.Errorf("the tool is %q, not %q", tool, s.tool)
		}
	}
	if err == nil {
		err = s.checkTitle(cctx)
	}
	cancel()
	if err != nil {
		return fmt.Errorf("hot swap: %w", err)
	}
	defer s.cs.Close()

	r := &h.report
	r.Swap.Tool = s.tool
	r.Swap.Plugin = o.swapPlugin
	r.Swap.Rate = o.swapRate
	r.Swap.SwapsPerWindow = o.swaps
	r.Swap.Interval = o.swapInterval
	r.Swap.Window = time.Duration(o.swaps) * o.swapInterval
	r.Swap.Rounds = o.swapRounds
	r.Swap.Workers = bench.DefaultRateWorkers
	// Warm-up, not counted: a second of calls at the rate.
	if _, err := bench.Run(ctx, s.cs, bench.Options{Tool: s.tool, Rate: o.swapRate, Calls: max(int(o.swapRate), 1), Warmup: -1}); err != nil {
		return fmt.Errorf("hot swap: warm-up: %w", err)
	}
	for round := range o.swapRounds {
		// Alternate which window runs first, so drift hits both alike.
		kinds := []string{swapWithout, swapWith}
		if round%2 == 1 {
			kinds = []string{swapWith, swapWithout}
		}
		for _, kind := range kinds {
			sample, err := s.window(ctx, round+1, kind == swapWith)
			if err != nil {
				return fmt.Errorf("hot swap: round %d, window %s: %w", round+1, kind, err)
			}
			sample.Load = loadavg()
			r.Swap.Samples = append(r.Swap.Samples, sample)
		}
		h.logf("swap: round %d/%d done, generation %d (load %s)", round+1, o.swapRounds, s.gen, loadavg())
	}
	return nil
}

// window runs calls at the rate for the window's length and, if swaps is
// set, makes the swaps at evenly spaced times meanwhile.
func (s *swapRun) window(ctx context.Context, round int, swaps bool) (SwapSample, error) {
	o := s.h.o
	length := time.Duration(o.swaps) * o.swapInterval
	sample := SwapSample{Round: round, Kind: swapWithout}
	if !swaps {
		res, err := bench.Run(ctx, s.cs, bench.Options{Tool: s.tool, Rate: o.swapRate, Duration: length, Warmup: -1})
		sample.Result = res
		return sample, err
	}
	sample.Kind = swapWith
	sample.Swaps = o.swaps
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		swapErr error
		landed  []time.Time
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		begin := time.Now()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for k := range o.swaps {
			// Swap k at the middle of the k-th of swaps equal slices.
			slot := begin.Add(length * time.Duration(2*k+1) / time.Duration(2*o.swaps))
			if d := time.Until(slot); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-wctx.Done():
					return
				}
			}
			sample.MaxLag = max(sample.MaxLag, time.Since(slot))
			took, seen, at, err := s.swap(wctx)
			if err != nil {
				swapErr = err
				cancel() // ends the calls: the run fails
				return
			}
			sample.ReloadTook = append(sample.ReloadTook, took)
			sample.ReloadSeen = append(sample.ReloadSeen, seen)
			landed = append(landed, at)
		}
	}()
	res, err := bench.Run(wctx, s.cs, bench.Options{Tool: s.tool, Rate: o.swapRate, Duration: length, Warmup: -1})
	end := time.Now()
	if err != nil {
		cancel() // the swaps have nothing to be measured against
	}
	<-done
	if swapErr != nil {
		return sample, swapErr
	}
	if err != nil {
		return sample, err
	}
	sample.Result = res
	sample.Landed = len(landed)
	for _, at := range landed {
		if !at.After(end) {
			sample.LandedInWindow++
		}
	}
	if sample.Landed < sample.Swaps {
		return sample, fmt.Errorf("%d of %d swaps landed", sample.Landed, sample.Swaps)
	}
	// The last swap is what a client sees now.
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	return sample, s.checkTitle(cctx)
}

// swap writes the config with the next title and sends SIGHUP, then waits
// for mcphost to log a new plugin generation and the end of the reload.
// It returns how long mcphost says building the new generation took, the
// time from the signal to the "reloaded" line, and when that line was read.
func (s *swapRun) swap(ctx context.Context) (took, seen time.Duration, at time.Time, err error) {
	s.seq++
	plugins, err := s.plugins()
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	// Written whole and renamed over, so a reload never reads half a file.
	next, err := s.h.mcphostConfig("swap.hcl.next", s.g.addr, s.cache, s.servers, plugins)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	if err := os.Rename(next, s.config); err != nil {
		return 0, 0, time.Time{}, err
	}
	p := s.g.proc
	failed := func(l string) bool {
		return strings.Contains(l, "reload refused") || strings.Contains(l, "reload failed") || strings.Contains(l, "reconfiguring upstreams failed")
	}
	swapped := p.Watch(func(l string) bool { return strings.Contains(l, "plugins swapped in: ") || failed(l) })
	reloaded := p.Watch(func(l string) bool { return strings.Contains(l, ": reloaded: ") || failed(l) })
	sent := time.Now()
	if err := syscall.Kill(p.PID(), syscall.SIGHUP); err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("SIGHUP: %w", err)
	}
	l, err := swapped.Wait(ctx, reloadTimeout)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("swap %d: no new plugin generation: %w", s.seq, err)
	}
	gen, took, ok := parseSwapped(l.Text)
	if !ok {
		return 0, 0, time.Time{}, fmt.Errorf("swap %d: %s", s.seq, l.Text)
	}
	if gen <= s.gen {
		return 0, 0, time.Time{}, fmt.Errorf("swap %d: generation %d after %d", s.seq, gen, s.gen)
	}
	s.gen = gen
	l, err = reloaded.Wait(ctx, reloadTimeout)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("swap %d: the reload did not finish: %w", s.seq, err)
	}
	if failed(l.Text) {
		return 0, 0, time.Time{}, fmt.Errorf("swap %d: %s", s.seq, l.Text)
	}
	return took, l.At.Sub(sent), l.At, nil
}

// plugins is the chain with the swapped plugin's config for s.seq.
func (s *swapRun) plugins() (string, error) {
	return withPluginConfig(s.h.chain, s.h.o.swapPlugin, titlesConfig(s.tool, swapTitle(s.seq)))
}

// checkTitle checks that tools/list shows the title of the config written
// last: the swap reached clients.
func (s *swapRun) checkTitle(ctx context.Context) error {
	want := swapTitle(s.seq)
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		if t.Name == s.tool {
			if t.Title != want {
				return fmt.Errorf("after swap %d, %s has the title %q, not %q", s.seq, s.tool, t.Title, want)
			}
			return nil
		}
	}
	return fmt.Errorf("no tool %q listed", s.tool)
}

func swapTitle(seq int) string { return "Hot swap " + strconv.Itoa(seq) }

// titlesConfig is the config of builtin:titles giving tool the title, as
// HCL.
func titlesConfig(tool, title string) string {
	return fmt.Sprintf("{ overrides = { %s = %s } }", strconv.Quote(tool), strconv.Quote(title))
}

// withPluginConfig returns the plugin blocks of chain with the config
// attribute of plugin name set to config (an HCL expression), everything
// else as it was.
func withPluginConfig(chain, name, config string) (string, error) {
	f, diags := hclsyntax.ParseConfig([]byte(chain), "chain.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return "", diags
	}
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type != "plugin" || len(b.Labels) != 1 || b.Labels[0] != name {
			continue
		}
		if a := b.Body.Attributes["config"]; a != nil {
			r := a.Expr.Range()
			return chain[:r.Start.Byte] + config + chain[r.End.Byte:], nil
		}
		end := b.CloseBraceRange.Start.Byte
		return chain[:end] + "\n  config = " + config + "\n" + chain[end:], nil
	}
	return "", fmt.Errorf("the chain has no plugin %q to swap", name)
}

var swappedLine = regexp.MustCompile(`plugins swapped in: generation=([0-9]+) .*took=([0-9.]+[a-zµ]+)`)

// parseSwapped reads the generation and the time taken from the plugin
// manager's "plugins swapped in" log line.
func parseSwapped(line string) (gen uint64, took time.Duration, ok bool) {
	m := swappedLine.FindStringSubmatch(line)
	if m == nil {
		return 0, 0, false
	}
	gen, err1 := strconv.ParseUint(m[1], 10, 64)
	took, err2 := time.ParseDuration(m[2])
	return gen, took, errors.Join(err1, err2) == nil
}
