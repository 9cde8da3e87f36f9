package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcphost-project/mcphost/internal/bench"
)

func sample(round int, target string, c int, p50 time.Duration, cps float64) CallSample {
	return CallSample{Round: round, Target: target, Concurrency: c, Result: &bench.Result{Calls: 100, CallsPerSec: cps, Stats: bench.Stats{P50: p50, P99: 2 * p50}}, RSS: 10 << 20, RSSAnon: 6 << 20, RSSFile: 4 << 20, Calls: 110}
}

func TestSummaryRatiosAndGoals(t *testing.T) {
	t.Parallel()
	var r Report
	r.Calls.Concurrency = []int{1, 4}
	r.Calls.Targets = []TargetInfo{{Name: directName}, {Name: namePlain}, {Name: nameChain}, {Name: nameMCPGo}}
	// Round 2 is slower for everyone: ratios are taken within a round.
	for round, scale := range map[int]time.Duration{1: 1, 2: 3, 3: 1} {
		r.Calls.Samples = append(r.Calls.Samples,
			sample(round, directName, 1, 100*time.Microsecond*scale, 1000/float64(scale)),
			sample(round, namePlain, 1, 130*time.Microsecond*scale, 800/float64(scale)),
			sample(round, nameChain, 1, 130*time.Microsecond*scale+40*time.Microsecond, 700/float64(scale)),
			sample(round, directName, 4, 200*time.Microsecond*scale, 2000/float64(scale)),
			sample(round, namePlain, 4, 300*time.Microsecond*scale, 1000/float64(scale)),
			// A peer ahead at c=1 (p50, calls/s), behind at c=4.
			sample(round, nameMCPGo, 1, 120*time.Microsecond*scale, 850/float64(scale)),
			sample(round, nameMCPGo, 4, 400*time.Microsecond*scale, 900/float64(scale)),
		)
		// The chain after its load run: over issue 33's 60 MiB.
		r.Calls.Samples[len(r.Calls.Samples)-5].RSS = 100 << 20
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
		"p50 through mcphost, no plugins, c=1":                                           "missed", // 1.3x against issue 20's 1.2x
		"ahead of every peer gateway on p50, p99, calls/s and gateway CPU per call, c=1": "missed",
		"ahead of every peer gateway on p50, p99, calls/s and gateway CPU per call, c=4": "met",
		"p50 through mcphost, no plugins, c=4":                                           "missed",
		"calls/s through mcphost, no plugins, c=4":                                       "missed",
		"p50 added by the quickstart chain, c=1":                                         "met",
		"idle RSS, no plugins":                                                           "met",
		"idle RSS, quickstart chain":                                                     "met",
		"RSS after a load run, no plugins (c=4)":                                         "met",
		"RSS after a load run, quickstart chain (c=1)":                                   "missed",
		"p50 added by the quickstart chain, c=4":                                         "not measured",
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
	for _, s := range []string{"| mcphost, stdio upstream, no plugins | 1 | 130µs | 260µs | 800 | 1.30x | 0.80x | 10.0 MiB | 6.0 MiB | 4.0 MiB | 0 |", "### Targets", "### Start-up"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, md.String())
		}
	}
}

func TestLoadPlugins(t *testing.T) {
	t.Parallel()
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

func TestWithPluginConfig(t *testing.T) {
	t.Parallel()
	chain := `plugin "no-delete" {
  source = "builtin:deny"
  config = { tools = ["notes__delete_note"] }
}

plugin "titles" {
  source = "builtin:titles"
  config = { overrides = { "clock__current_time" = "What time is it?" } }
}

plugin "redact" {
  source = "builtin:redact"
}
`
	got, err := withPluginConfig(chain, "titles", titlesConfig("everything__test_simple_text", swapTitle(7)))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(chain, `{ overrides = { "clock__current_time" = "What time is it?" } }`, `{ overrides = { "everything__test_simple_text" = "Hot swap 7" } }`, 1)
	if got != want {
		t.Errorf("titles swapped:\n%s\nwant:\n%s", got, want)
	}
	// A plugin without a config gets one; the others stay as they were.
	got, err = withPluginConfig(chain, "redact", `{ a = "b" }`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, chain[:strings.Index(chain, `plugin "redact"`)]) || !strings.Contains(got, "source = \"builtin:redact\"\n\n  config = { a = \"b\" }\n}") {
		t.Errorf("config added:\n%s", got)
	}
	// The result is a config mcphost's parser takes.
	if _, diags := hclsyntax.ParseConfig([]byte(got), "x.hcl", hcl.InitialPos); diags.HasErrors() {
		t.Errorf("does not parse: %v", diags)
	}
	if _, err := withPluginConfig(chain, "nope", "{}"); err == nil || !strings.Contains(err.Error(), `no plugin "nope"`) {
		t.Errorf("unknown plugin: err = %v", err)
	}
}

// The config the swap section writes: one stdio upstream, the chain with the
// swapped title, and runtime { cache_dir, watch = false } (swaps are SIGHUPs).
func TestSwapConfig(t *testing.T) {
	t.Parallel()
	h := &harness{work: t.TempDir(), chain: "plugin \"titles\" {\n  source = \"builtin:titles\"\n}\n"}
	h.o.swapPlugin = "titles"
	s := &swapRun{h: h, tool: "everything__test_simple_text", seq: 3}
	plugins, err := s.plugins()
	if err != nil {
		t.Fatal(err)
	}
	path, err := h.mcphostConfig("swap.hcl", "127.0.0.1:1", "/cache", []server{{name: "everything", transport: "stdio", command: []string{"/bin/everything-server"}}}, plugins)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`http = "127.0.0.1:1"`, `server "everything" {`, `command = "/bin/everything-server"`, `plugin "titles" {`,
		`config = { overrides = { "everything__test_simple_text" = "Hot swap 3" } }`, `cache_dir = "/cache"`, `watch = false`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config lacks %q:\n%s", want, b)
		}
	}
}

func TestParseSwapped(t *testing.T) {
	t.Parallel()
	gen, took, ok := parseSwapped("2026-11-22T05:02:34.167Z [INFO]  mcphost.plugins: plugins swapped in: generation=12 plugins=5 took=16.198885ms")
	if !ok || gen != 12 || took != 16198885*time.Nanosecond {
		t.Errorf("got %d %v %v", gen, took, ok)
	}
	if _, took, ok := parseSwapped("mcphost.plugins: plugins swapped in: generation=3 plugins=1 took=850.5µs"); !ok || took != 850500*time.Nanosecond {
		t.Errorf("µs: %v %v", took, ok)
	}
	if _, _, ok := parseSwapped("mcphost: reloaded: servers=1 plugins=5"); ok {
		t.Error("a reloaded line parsed as a swap")
	}
}

func swapSample(round int, kind string, p50, p99 time.Duration, failures, swaps int) SwapSample {
	s := SwapSample{Round: round, Kind: kind, Result: &bench.Result{Calls: 2000, Failures: failures, Rate: 200, MaxInFlight: 3, Stats: bench.Stats{P50: p50, P99: p99, Max: 2 * p99}}}
	if kind == swapWith {
		s.Swaps, s.Landed, s.LandedInWindow = swaps, swaps, swaps
		for range swaps {
			s.ReloadTook = append(s.ReloadTook, 10*time.Millisecond)
			s.ReloadSeen = append(s.ReloadSeen, 12*time.Millisecond)
		}
	}
	return s
}

func TestSwapSummaryAndGoals(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	var r Report
	r.Swap.Rate, r.Swap.SwapsPerWindow = 200, 100
	// Round 2 is slower for both kinds: ratios are taken within a round.
	r.Swap.Samples = []SwapSample{
		swapSample(1, swapWithout, 1*ms, 4*ms, 0, 0), swapSample(1, swapWith, 1*ms, 6*ms, 0, 100),
		swapSample(2, swapWith, 2*ms, 30*ms, 0, 100), swapSample(2, swapWithout, 2*ms, 20*ms, 0, 0),
		swapSample(3, swapWithout, 1*ms, 5*ms, 0, 0), swapSample(3, swapWith, 1*ms, 9*ms, 0, 100),
	}
	r.evaluate()
	s := r.Swap.Summary
	if s == nil {
		t.Fatal("no summary")
	}
	if want := []float64{1.5, 1.5, 1.8}; !slices.Equal(s.P99Ratios, want) || s.P99Ratio != 1.5 {
		t.Errorf("ratios %v median %v, want %v and 1.5", s.P99Ratios, s.P99Ratio, want)
	}
	if s.Without.P99 != 5*ms || s.With.P99 != 9*ms || s.With.Max != 60*ms || s.Calls != 12000 || s.SwapsLanded != 300 || s.ReloadTookP50 != 10*ms || s.ReloadSeenMax != 12*ms {
		t.Errorf("summary %+v", s)
	}
	status := func() map[string]string {
		m := map[string]string{}
		for _, g := range r.Goals {
			if strings.Contains(g.What, "hot swap") {
				m[strings.SplitN(g.What, " ", 2)[0]] = g.Status
			}
		}
		return m
	}
	if got := status(); got["failed"] != "met" || got["p99"] != "met" {
		t.Errorf("goals %v", got)
	}
	// A failed call misses; a ratio over 2 misses.
	r.Swap.Samples[3].Result.Failures = 1
	r.Swap.Samples[5].Result.P99 = 40 * ms
	r.Swap.Samples[1].Result.P99 = 40 * ms
	r.evaluate()
	if got := status(); got["failed"] != "missed" || got["p99"] != "missed" {
		t.Errorf("goals %v", got)
	}
	// Fewer than 100 swaps without a failure: not enough to judge.
	r.Swap.Samples = r.Swap.Samples[:2]
	r.Swap.Samples[1].Swaps, r.Swap.Samples[1].Landed = 20, 20
	r.evaluate()
	if got := status(); got["failed"] != "not measured" {
		t.Errorf("goals %v", got)
	}
	var md bytes.Buffer
	r.writeMarkdown(&md)
	for _, want := range []string{"### Hot swap under load", "| without swaps | 1 | 2000 |", "| with 100 swaps | 1 | 2000 |", "Swaps: 20 requested, 20 landed"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}

	// No swap section: both goals are there, not measured.
	r = Report{}
	r.evaluate()
	n := 0
	for _, g := range r.Goals {
		if strings.Contains(g.What, "hot swaps") {
			n++
			if g.Status != "not measured" {
				t.Errorf("%s: %s", g.What, g.Status)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d hot swap goals", n)
	}
}

// The mcp-go gateway's row names the mcp-go version its module requires, and
// that module is its own: the main module must not require mcp-go.
func TestMCPGoPeerModule(t *testing.T) {
	t.Parallel()
	repo := filepath.Join("..", "..", "..")
	peer, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(mcpgoDir), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"module github.com/mcphost-project/mcphost/" + mcpgoDir + "\n", "github.com/mark3labs/mcp-go " + mcpgoVersion + "\n"} {
		if !strings.Contains(string(peer), want) {
			t.Errorf("%s/go.mod lacks %q:\n%s", mcpgoDir, want, peer)
		}
	}
	root, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(root), "mark3labs/mcp-go") {
		t.Error("the main module's go.mod requires mcp-go")
	}
}

// A gateway that does not build is a one-line note, not the run's failure.
func TestBuildMCPGoFailure(t *testing.T) {
	t.Parallel()
	h := &harness{repo: t.TempDir(), work: t.TempDir()}
	bin, err := h.buildMCPGo(t.Context())
	if err == nil || bin != "" {
		t.Fatalf("bin %q err %v", bin, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "go build -C "+mcpgoDir+": ") || strings.Contains(msg, "\n") {
		t.Errorf("err %q", msg)
	}
}
