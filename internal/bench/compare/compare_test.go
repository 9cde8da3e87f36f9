package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/bench"
)

func sample(round int, target string, c int, p50 time.Duration, cps float64) CallSample {
	return CallSample{Round: round, Target: target, Concurrency: c, Result: &bench.Result{Calls: 100, CallsPerSec: cps, Stats: bench.Stats{P50: p50, P99: 2 * p50}}, RSS: 10 << 20, Calls: 110}
}

func TestSummaryRatiosAndGoals(t *testing.T) {
	var r Report
	r.Calls.Concurrency = []int{1, 4}
	r.Calls.Targets = []TargetInfo{{Name: directName}, {Name: namePlain}, {Name: nameChain}}
	// Round 2 is slower for everyone: ratios are taken within a round.
	for round, scale := range map[int]time.Duration{1: 1, 2: 3, 3: 1} {
		r.Calls.Samples = append(r.Calls.Samples,
			sample(round, directName, 1, 100*time.Microsecond*scale, 1000/float64(scale)),
			sample(round, namePlain, 1, 130*time.Microsecond*scale, 800/float64(scale)),
			sample(round, nameChain, 1, 130*time.Microsecond*scale+40*time.Microsecond, 700/float64(scale)),
			sample(round, directName, 4, 200*time.Microsecond*scale, 2000/float64(scale)),
			sample(round, namePlain, 4, 300*time.Microsecond*scale, 1000/float64(scale)),
		)
	}
	r.Startup = []StartupSummary{
		{Config: startPlain, Samples: []StartSample{{Ready: 20 * time.Millisecond, IdleRSS: 15 << 20}}},
		{Config: startChainWarm, Samples: []StartSample{{Ready: 400 * time.Millisecond, IdleRSS: 100 << 20}}},
	}
	r.List.Results = []ListResult{{Path: "mcphost, quickstart chain", Tools: 1000, Changes: 3,
		Cached: bench.Stats{P50: 800 * time.Microsecond}, AfterChange: bench.Stats{P50: 150 * time.Millisecond}}}
	r.evaluate()

	s := r.callSummary(namePlain, 1)
	if s == nil || s.P50Ratio != 1.3 || s.Rounds != 3 || s.P50 != 130*time.Microsecond {
		t.Fatalf("plain c=1 summary %+v", s)
	}
	if s.GatewayCPU != 0 || s.RSS != 10<<20 {
		t.Errorf("cpu %v rss %d", s.GatewayCPU, s.RSS)
	}
	if d, ok := r.chainOverhead(1); !ok || d != 40*time.Microsecond {
		t.Errorf("chain overhead %v %v", d, ok)
	}
	want := map[string]string{
		"p50 through mcphost, no plugins, c=1":     "met",
		"p50 through mcphost, no plugins, c=4":     "missed",
		"calls/s through mcphost, no plugins, c=4": "missed",
		"p50 added by the quickstart chain, c=1":   "met",
		"idle RSS, no plugins":                     "met",
		"idle RSS, quickstart chain":               "met",
	}
	got := map[string]string{}
	for _, g := range r.Goals {
		got[g.What] = g.Status
		if strings.HasPrefix(g.What, "tools/list") && g.Status != "met" {
			t.Errorf("%s: %s", g.What, g.Status)
		}
		if strings.HasPrefix(g.What, "the same, first list") && g.Status != "missed" {
			t.Errorf("%s: %s", g.What, g.Status)
		}
		if strings.HasPrefix(g.What, "ready,") && g.Status != "missed" {
			t.Errorf("%s: %s", g.What, g.Status)
		}
	}
	for what, st := range want {
		if got[what] != st {
			t.Errorf("%s: %q, want %q", what, got[what], st)
		}
	}
	var md bytes.Buffer
	r.writeMarkdown(&md)
	for _, s := range []string{"| mcphost, stdio upstream, no plugins | 1 | 130µs | 260µs | 800 | 1.30x | 0.80x | 10.0 MiB | 0 |", "### Targets", "### Start-up"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, md.String())
		}
	}
}

func TestLoadPlugins(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.hcl")
	src := `server "a" {
  command = "x"
}

plugin "local" {
  source = "./policies/p.wasm"
  config = { k = "v" }
}

# a comment
plugin "shipped" {
  source = "builtin:deny"
}
`
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &harness{o: options{pluginsConfig: cfg}, repo: dir}
	h.loadPlugins()
	if len(h.report.Notes) > 0 {
		t.Fatalf("notes: %q", h.report.Notes)
	}
	abs := filepath.Join(dir, "policies", "p.wasm")
	for _, want := range []string{`plugin "local" {`, `source = "` + abs + `"`, `config = { k = "v" }`, `plugin "shipped" {`, `source = "builtin:deny"`} {
		if !strings.Contains(h.chain, want) {
			t.Errorf("chain lacks %q:\n%s", want, h.chain)
		}
	}
	if strings.Contains(h.chain, "server") {
		t.Errorf("chain has a server block:\n%s", h.chain)
	}
	if h.report.Chain != "config.hcl: local, shipped" {
		t.Errorf("chain description %q", h.report.Chain)
	}

	none := filepath.Join(dir, "none.hcl")
	os.WriteFile(none, []byte(`server "a" { command = "x" }`), 0o644)
	h = &harness{o: options{pluginsConfig: none}, repo: dir}
	h.loadPlugins()
	if h.chain != "" || len(h.report.Notes) != 1 || !strings.Contains(h.report.Notes[0], "no plugin blocks") {
		t.Errorf("chain %q notes %q", h.chain, h.report.Notes)
	}
}
