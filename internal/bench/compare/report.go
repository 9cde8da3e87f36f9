package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/internal/bench"
)

// Report is every figure of one run; it marshals to the -json file.
type Report struct {
	Date       string `json:"date"`
	Cores      int    `json:"cores"`
	CPU        string `json:"cpu"`
	Commit     string `json:"commit"`
	GoVersion  string `json:"go_version"`
	Command    string `json:"command"`
	LoadBefore string `json:"loadavg_before"`
	LoadAfter  string `json:"loadavg_after"`
	Took       string `json:"took"`
	Chain      string `json:"chain,omitempty"`
	// Binaries are the sizes of the gateways' binaries as built here
	// (go build with no flags; a release build, -trimpath -ldflags='-s
	// -w', drops the symbol table and DWARF, which are never mapped).
	Binaries []NamedBytes `json:"binaries,omitempty"`

	Calls struct {
		Tool          string        `json:"tool"`
		CallsPerRound int           `json:"calls_per_round"`
		Warmup        int           `json:"warmup"`
		Rounds        int           `json:"rounds"`
		Concurrency   []int         `json:"concurrency"`
		Targets       []TargetInfo  `json:"targets"`
		Samples       []CallSample  `json:"samples"`
		Summary       []CallSummary `json:"summary"`
		PeakRSS       []NamedBytes  `json:"peak_rss"`
	} `json:"calls"`
	Startup []StartupSummary `json:"startup"`
	List    struct {
		Upstreams        int          `json:"upstreams"`
		ToolsPerUpstream int          `json:"tools_per_upstream"`
		Results          []ListResult `json:"results"`
	} `json:"list"`
	Swap struct {
		Tool           string        `json:"tool,omitempty"`
		Plugin         string        `json:"plugin,omitempty"`
		Rate           float64       `json:"rate,omitempty"`
		Workers        int           `json:"max_in_flight_allowed,omitempty"`
		SwapsPerWindow int           `json:"swaps_per_window,omitempty"`
		Interval       time.Duration `json:"interval_ns,omitempty"`
		Window         time.Duration `json:"window_ns,omitempty"`
		Rounds         int           `json:"rounds,omitempty"`
		Samples        []SwapSample  `json:"samples,omitempty"`
		Summary        *SwapSummary  `json:"summary,omitempty"`
	} `json:"swap"`
	Profiles []Profile `json:"profiles,omitempty"`
	Goals    []Goal    `json:"goals"`
	Notes    []string  `json:"notes,omitempty"`
}

type TargetInfo struct {
	Name string `json:"name"`
	Note string `json:"note,omitempty"`
}

type CallSample struct {
	Round       int           `json:"round"`
	Target      string        `json:"target"`
	Concurrency int           `json:"concurrency"`
	Result      *bench.Result `json:"result"`
	RSS         int64         `json:"rss_bytes"`
	// RSSAnon and RSSFile split RSS (RssAnon, RssFile of /proc/PID/status):
	// the process's own memory, and the binary's pages it maps from the
	// page cache (shared by every process of the same binary).
	RSSAnon int64 `json:"rss_anon_bytes"`
	RSSFile int64 `json:"rss_file_bytes"`
	// Calls counts warm-up calls too, as CPU does.
	Calls int      `json:"calls_with_warmup"`
	CPU   cpuTimes `json:"cpu"`
}

// CallSummary is the medians over rounds of one target at one concurrency;
// ratios are to the direct target in the same round.
type CallSummary struct {
	Target      string        `json:"target"`
	Concurrency int           `json:"concurrency"`
	Rounds      int           `json:"rounds"`
	Failures    int           `json:"failures"`
	P50         time.Duration `json:"p50_ns"`
	P99         time.Duration `json:"p99_ns"`
	CallsPerSec float64       `json:"calls_per_sec"`
	P50Ratio    float64       `json:"p50_ratio"`
	CPSRatio    float64       `json:"calls_per_sec_ratio"`
	RSS         int64         `json:"rss_bytes"`
	RSSAnon     int64         `json:"rss_anon_bytes"`
	RSSFile     int64         `json:"rss_file_bytes"`
	// CPU per call, totals over every round divided by calls made.
	GatewayCPU time.Duration `json:"gateway_cpu_per_call_ns"`
	ServerCPU  time.Duration `json:"server_side_cpu_per_call_ns"`
	ClientCPU  time.Duration `json:"client_cpu_per_call_ns"`
}

type NamedBytes struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

type StartSample struct {
	Ready      time.Duration `json:"ready_ns"`
	PluginLoad time.Duration `json:"plugin_load_ns"` // from mcphost's "plugins loaded" log line
	IdleRSS    int64         `json:"idle_rss_bytes"`
	IdleAnon   int64         `json:"idle_rss_anon_bytes"` // RssAnon then
	IdleFile   int64         `json:"idle_rss_file_bytes"` // RssFile then
}

type StartupSummary struct {
	Config  string        `json:"config"`
	Samples []StartSample `json:"samples"`
}

func (s StartupSummary) ready() (median, lo, hi time.Duration) {
	var v []time.Duration
	for _, x := range s.Samples {
		v = append(v, x.Ready)
	}
	if len(v) == 0 {
		return 0, 0, 0
	}
	return bench.Median(v), slices.Min(v), slices.Max(v)
}

func (s StartupSummary) pluginLoad() time.Duration {
	var v []time.Duration
	for _, x := range s.Samples {
		v = append(v, x.PluginLoad)
	}
	return bench.Median(v)
}

// parts is the median anonymous and file-backed idle RSS.
func (s StartupSummary) parts() (anon, file int64) {
	var a, f []int64
	for _, x := range s.Samples {
		a = append(a, x.IdleAnon)
		f = append(f, x.IdleFile)
	}
	return bench.Median(a), bench.Median(f)
}

func (s StartupSummary) rss() int64 {
	var v []int64
	for _, x := range s.Samples {
		v = append(v, x.IdleRSS)
	}
	return bench.Median(v)
}

type ListResult struct {
	Path          string      `json:"path"`
	Tools         int         `json:"tools"`
	Cached        bench.Stats `json:"cached"`     // raw HTTP client
	SDKCached     bench.Stats `json:"sdk_cached"` // go-sdk client
	Changes       int         `json:"changes,omitempty"`
	Stale         int         `json:"stale,omitempty"`
	AfterChange   bench.Stats `json:"after_change"`
	ChangeVisible bench.Stats `json:"change_visible"`
	Error         string      `json:"error,omitempty"`
}

// SwapSample is one window of the hot swap section.
type SwapSample struct {
	Round  int           `json:"round"`
	Kind   string        `json:"kind"` // swapWithout or swapWith
	Result *bench.Result `json:"result"`
	// With swaps: how many were asked for, how many mcphost confirmed in
	// its log, and how many of those before the window's calls ended.
	Swaps          int `json:"swaps,omitempty"`
	Landed         int `json:"landed,omitempty"`
	LandedInWindow int `json:"landed_in_window,omitempty"`
	// MaxLag is the latest a swap started after its slot, because the swap
	// before had not finished.
	MaxLag time.Duration `json:"max_lag_ns,omitempty"`
	// ReloadTook is what mcphost logged each new generation took to build;
	// ReloadSeen is from SIGHUP to its "reloaded" line, as read here.
	ReloadTook []time.Duration `json:"reload_took_ns,omitempty"`
	ReloadSeen []time.Duration `json:"reload_seen_ns,omitempty"`
	// Load is the load average right after the window: neighbours' work
	// shows here.
	Load string `json:"loadavg_after"`
}

// SwapKindSummary is every window of one kind: medians of p50 and p99 over
// the windows, the largest max, totals of calls and failures.
type SwapKindSummary struct {
	Windows     int           `json:"windows"`
	Calls       int           `json:"calls"`
	Failures    int           `json:"failures"`
	P50         time.Duration `json:"p50_ns"`
	P99         time.Duration `json:"p99_ns"`
	Max         time.Duration `json:"max_ns"`
	MaxInFlight int           `json:"max_in_flight"`
}

// SwapSummary is the hot swap section's figures.
type SwapSummary struct {
	Without SwapKindSummary `json:"without"`
	With    SwapKindSummary `json:"with"`
	// P99Ratio is the median over rounds of p99 with swaps divided by p99
	// without, both from the same round (P99Ratios, in round order).
	P99Ratio  float64   `json:"p99_ratio"`
	P99Ratios []float64 `json:"p99_ratios"`
	// Over every window of both kinds.
	Calls      int    `json:"calls"`
	Failures   int    `json:"failures"`
	FirstError string `json:"first_error,omitempty"`
	// Swaps, over every window with swaps.
	SwapsRequested int           `json:"swaps_requested"`
	SwapsLanded    int           `json:"swaps_landed"`
	LandedInWindow int           `json:"swaps_landed_in_window"`
	MaxLag         time.Duration `json:"max_lag_ns"`
	ReloadTookP50  time.Duration `json:"reload_took_p50_ns"`
	ReloadTookMax  time.Duration `json:"reload_took_max_ns"`
	ReloadSeenP50  time.Duration `json:"reload_seen_p50_ns"`
	ReloadSeenMax  time.Duration `json:"reload_seen_max_ns"`
}

// summarizeSwap computes the hot swap summary from its samples.
func (r *Report) summarizeSwap() {
	r.Swap.Summary = nil
	if len(r.Swap.Samples) == 0 {
		return
	}
	sum := &SwapSummary{}
	kinds := map[string]*SwapKindSummary{swapWithout: &sum.Without, swapWith: &sum.With}
	p50s := map[string][]time.Duration{}
	p99s := map[string][]time.Duration{}
	p99By := map[string]map[int]time.Duration{swapWithout: {}, swapWith: {}}
	var rounds []int
	var took, seen []time.Duration
	for _, s := range r.Swap.Samples {
		k := kinds[s.Kind]
		if k == nil || s.Result == nil {
			continue
		}
		res := s.Result
		k.Windows++
		k.Calls += res.Calls
		k.Failures += res.Failures
		k.Max = max(k.Max, res.Max)
		k.MaxInFlight = max(k.MaxInFlight, res.MaxInFlight)
		p50s[s.Kind] = append(p50s[s.Kind], res.P50)
		p99s[s.Kind] = append(p99s[s.Kind], res.P99)
		if _, seenRound := p99By[swapWithout][s.Round]; !seenRound {
			if _, seenRound = p99By[swapWith][s.Round]; !seenRound {
				rounds = append(rounds, s.Round)
			}
		}
		p99By[s.Kind][s.Round] = res.P99
		if sum.FirstError == "" {
			sum.FirstError = res.FirstError
		}
		if s.Kind == swapWith {
			sum.SwapsRequested += s.Swaps
			sum.SwapsLanded += s.Landed
			sum.LandedInWindow += s.LandedInWindow
			sum.MaxLag = max(sum.MaxLag, s.MaxLag)
			took = append(took, s.ReloadTook...)
			seen = append(seen, s.ReloadSeen...)
		}
	}
	for kind, k := range kinds {
		k.P50 = bench.Median(p50s[kind])
		k.P99 = bench.Median(p99s[kind])
	}
	sum.Calls = sum.Without.Calls + sum.With.Calls
	sum.Failures = sum.Without.Failures + sum.With.Failures
	for _, round := range rounds {
		w, ok1 := p99By[swapWith][round]
		wo, ok2 := p99By[swapWithout][round]
		if ok1 && ok2 && wo > 0 {
			sum.P99Ratios = append(sum.P99Ratios, float64(w)/float64(wo))
		}
	}
	sum.P99Ratio = bench.Median(sum.P99Ratios)
	if len(took) > 0 {
		sum.ReloadTookP50, sum.ReloadTookMax = bench.Median(took), slices.Max(took)
	}
	if len(seen) > 0 {
		sum.ReloadSeenP50, sum.ReloadSeenMax = bench.Median(seen), slices.Max(seen)
	}
	r.Swap.Summary = sum
}

// swapGoalSwaps is how many swaps issue 6's target asks for.
const swapGoalSwaps = 100

type Profile struct {
	Config      string        `json:"config"`
	File        string        `json:"file"`
	Load        string        `json:"load"`
	Duration    time.Duration `json:"duration_ns"`
	Calls       int           `json:"calls"`
	CallsPerSec float64       `json:"calls_per_sec"`
	Top         string        `json:"top"`
	TopCum      string        `json:"top_cum"`
}

// Goal is one of issue 6's targets with what this run measured.
type Goal struct {
	What     string `json:"what"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Status   string `json:"status"` // met, missed, not measured
}

const (
	namePlain = "mcphost, stdio upstream, no plugins"
	nameChain = "mcphost, stdio upstream, quickstart chain"
)

// summarize computes CallSummary rows, in target order.
func (r *Report) summarize() {
	type key struct {
		t string
		c int
	}
	by := map[key][]CallSample{}
	direct := map[[2]int]*bench.Result{} // round, concurrency
	for _, s := range r.Calls.Samples {
		by[key{s.Target, s.Concurrency}] = append(by[key{s.Target, s.Concurrency}], s)
		if s.Target == directName {
			direct[[2]int{s.Round, s.Concurrency}] = s.Result
		}
	}
	r.Calls.Summary = nil
	for _, c := range r.Calls.Concurrency {
		for _, t := range r.Calls.Targets {
			ss := by[key{t.Name, c}]
			if len(ss) == 0 {
				continue
			}
			var p50, p99 []time.Duration
			var cps, ratio, cpsRatio []float64
			var rss, anon, file []int64
			fails, calls := 0, 0
			var cpu cpuTimes
			for _, s := range ss {
				calls += s.Calls
				cpu.Gateway += s.CPU.Gateway
				cpu.Server += s.CPU.Server
				cpu.Client += s.CPU.Client
				p50 = append(p50, s.Result.P50)
				p99 = append(p99, s.Result.P99)
				cps = append(cps, s.Result.CallsPerSec)
				rss = append(rss, s.RSS)
				anon = append(anon, s.RSSAnon)
				file = append(file, s.RSSFile)
				fails += s.Result.Failures
				if d := direct[[2]int{s.Round, c}]; d != nil && d.P50 > 0 && d.CallsPerSec > 0 {
					ratio = append(ratio, float64(s.Result.P50)/float64(d.P50))
					cpsRatio = append(cpsRatio, s.Result.CallsPerSec/d.CallsPerSec)
				}
			}
			sum := CallSummary{
				Target: t.Name, Concurrency: c, Rounds: len(ss), Failures: fails,
				P50: bench.Median(p50), P99: bench.Median(p99), CallsPerSec: bench.Median(cps),
				P50Ratio: bench.Median(ratio), CPSRatio: bench.Median(cpsRatio), RSS: bench.Median(rss),
				RSSAnon: bench.Median(anon), RSSFile: bench.Median(file),
			}
			if calls > 0 {
				sum.GatewayCPU = cpu.Gateway / time.Duration(calls)
				sum.ServerCPU = cpu.Server / time.Duration(calls)
				sum.ClientCPU = cpu.Client / time.Duration(calls)
			}
			r.Calls.Summary = append(r.Calls.Summary, sum)
		}
	}
}

func (r *Report) callSummary(target string, c int) *CallSummary {
	for i := range r.Calls.Summary {
		if s := &r.Calls.Summary[i]; s.Target == target && s.Concurrency == c {
			return s
		}
	}
	return nil
}

// loadRSSGoal checks issue 33's resident memory after a load run: the
// target's RSS after its measurement at the highest concurrency measured
// (median over rounds).
func (r *Report) loadRSSGoal(goal func(what, target, measured string, ok, have bool), target, label string, limit int64) {
	var s *CallSummary
	for _, c := range r.Calls.Concurrency {
		if x := r.callSummary(target, c); x != nil && x.RSS > 0 {
			s = x
		}
	}
	what := "RSS after a load run, " + label
	if s == nil {
		goal(what, "<= "+fmtMiB(limit), "", false, false)
		return
	}
	goal(fmt.Sprintf("%s (c=%d)", what, s.Concurrency), "<= "+fmtMiB(limit),
		fmt.Sprintf("%s (anon %s, file %s)", fmtMiB(s.RSS), fmtMiB(s.RSSAnon), fmtMiB(s.RSSFile)), s.RSS <= limit, true)
}

// chainOverhead is the median over rounds of the chain's p50 minus the
// plain gateway's p50 in the same round.
// isPeer reports whether name is the row of a gateway other than mcphost.
func isPeer(name string) bool {
	return strings.HasPrefix(name, "supergateway ") || strings.HasPrefix(name, "mcp-proxy ") || name == nameMCPGo
}

// behindPeers lists where mcphost with no plugins is behind a peer gateway
// at concurrency c (p50, p99, calls/s, gateway CPU per call), and how many
// peers were measured.
func (r *Report) behindPeers(c int) (behind []string, peers int) {
	m := r.callSummary(namePlain, c)
	if m == nil {
		return nil, 0
	}
	for _, t := range r.Calls.Targets {
		p := r.callSummary(t.Name, c)
		if !isPeer(t.Name) || p == nil || p.CallsPerSec == 0 {
			continue
		}
		peers++
		short, _, _ := strings.Cut(t.Name, ",")
		if m.P50 > p.P50 {
			behind = append(behind, fmt.Sprintf("%s p50 %s vs %s", short, fmtDur(m.P50), fmtDur(p.P50)))
		}
		if m.P99 > p.P99 {
			behind = append(behind, fmt.Sprintf("%s p99 %s vs %s", short, fmtDur(m.P99), fmtDur(p.P99)))
		}
		if m.CallsPerSec < p.CallsPerSec {
			behind = append(behind, fmt.Sprintf("%s calls/s %.0f vs %.0f", short, m.CallsPerSec, p.CallsPerSec))
		}
		if m.GatewayCPU > p.GatewayCPU {
			behind = append(behind, fmt.Sprintf("%s CPU/call %s vs %s", short, fmtDur(m.GatewayCPU), fmtDur(p.GatewayCPU)))
		}
	}
	return behind, peers
}

func (r *Report) chainOverhead(c int) (time.Duration, bool) {
	plain := map[int]time.Duration{}
	for _, s := range r.Calls.Samples {
		if s.Target == namePlain && s.Concurrency == c {
			plain[s.Round] = s.Result.P50
		}
	}
	var d []time.Duration
	for _, s := range r.Calls.Samples {
		if p, ok := plain[s.Round]; ok && s.Target == nameChain && s.Concurrency == c {
			d = append(d, s.Result.P50-p)
		}
	}
	if len(d) == 0 {
		return 0, false
	}
	return bench.Median(d), true
}

func (r *Report) startup(config string) *StartupSummary {
	for i := range r.Startup {
		if r.Startup[i].Config == config && len(r.Startup[i].Samples) > 0 {
			return &r.Startup[i]
		}
	}
	return nil
}

func (r *Report) listResult(path string) *ListResult {
	for i := range r.List.Results {
		if r.List.Results[i].Path == path {
			return &r.List.Results[i]
		}
	}
	return nil
}

// evaluate checks the run against issue 6's targets.
func (r *Report) evaluate() {
	r.summarize()
	r.summarizeSwap()
	r.Goals = nil
	goal := func(what, target string, measured string, ok, have bool) {
		st := "not measured"
		if have {
			st = "met"
			if !ok {
				st = "missed"
			}
		} else {
			measured = "—"
		}
		r.Goals = append(r.Goals, Goal{What: what, Target: target, Measured: measured, Status: st})
	}
	ratioGoal := func(c int, limit float64) {
		s := r.callSummary(namePlain, c)
		have := s != nil && s.P50Ratio > 0
		var m string
		if have {
			m = fmt.Sprintf("%.2fx (%s vs %s)", s.P50Ratio, fmtDur(s.P50), fmtDur(r.callSummary(directName, c).P50))
		}
		goal(fmt.Sprintf("p50 through mcphost, no plugins, c=%d", c), fmt.Sprintf("<= %.2fx direct", limit), m, have && s.P50Ratio <= limit, have)
	}
	ratioGoal(1, 1.2) // issue 20 (issue 6 asked 1.4x)
	ratioGoal(4, 0.95)
	for _, c := range []int{1, 4} {
		behind, peers := r.behindPeers(c)
		goal(fmt.Sprintf("ahead of every peer gateway on p50, p99, calls/s and gateway CPU per call, c=%d", c), "all",
			fmt.Sprintf("behind on %d of %d (%s)", len(behind), 4*peers, strings.Join(behind, "; ")), len(behind) == 0, peers > 0)
	}
	if s := r.callSummary(namePlain, 4); s != nil && s.CPSRatio > 0 {
		goal("calls/s through mcphost, no plugins, c=4", ">= direct", fmt.Sprintf("%.2fx (%.0f vs %.0f)", s.CPSRatio, s.CallsPerSec, r.callSummary(directName, 4).CallsPerSec), s.CPSRatio >= 1, true)
	} else {
		goal("calls/s through mcphost, no plugins, c=4", ">= direct", "", false, false)
	}
	for _, c := range []int{1, 4} { // issue 33 asks for c=4 too
		d, ok := r.chainOverhead(c)
		goal(fmt.Sprintf("p50 added by the quickstart chain, c=%d", c), "<= 50µs", signedDur(d), d <= 50*time.Microsecond, ok)
	}
	r.loadRSSGoal(goal, namePlain, "no plugins", 20<<20)
	r.loadRSSGoal(goal, nameChain, "quickstart chain", 60<<20)
	if l := r.listResult("mcphost, quickstart chain"); l != nil && l.Error != "" {
		goal("tools/list of 1000 tools, quickstart chain", "<= 1ms cached, <= 100ms after a change", "failed: "+l.Error, false, true)
	} else if l != nil {
		goal(fmt.Sprintf("tools/list of %d tools / %d upstreams, quickstart chain, cached (p50, raw client)", l.Tools, r.List.Upstreams), "<= 1ms", fmtDur(l.Cached.P50), l.Cached.P50 <= time.Millisecond, true)
		goal("the same, first list after a change (p50, raw client)", "<= 100ms", fmtDur(l.AfterChange.P50), l.AfterChange.P50 <= 100*time.Millisecond, l.Changes > 0)
	} else {
		goal("tools/list of 1000 tools, quickstart chain, cached", "<= 1ms", "", false, false)
		goal("the same, first list after a change", "<= 100ms", "", false, false)
	}
	if s := r.startup(startChainWarm); s != nil {
		m, _, _ := s.ready()
		goal("ready, quickstart chain, warm compile cache (median)", "<= 300ms", fmtDur(m), m <= 300*time.Millisecond, true)
	} else {
		goal("ready, quickstart chain, warm compile cache", "<= 300ms", "", false, false)
	}
	if s := r.startup(startPlain); s != nil {
		goal("idle RSS, no plugins", "<= 20 MiB", fmtMiB(s.rss()), s.rss() <= 20<<20, true)
	} else {
		goal("idle RSS, no plugins", "<= 20 MiB", "", false, false)
	}
	var chainRSS []int64
	for _, name := range []string{startChainCold, startChainWarm} {
		if s := r.startup(name); s != nil {
			for _, x := range s.Samples {
				chainRSS = append(chainRSS, x.IdleRSS)
			}
		}
	}
	m := bench.Median(chainRSS)
	goal("idle RSS, quickstart chain", "<= 120 MiB", fmtMiB(m), m <= 120<<20, len(chainRSS) > 0)

	failTarget := fmt.Sprintf("0, across %d swaps", swapGoalSwaps)
	if s := r.Swap.Summary; s != nil {
		what := fmt.Sprintf("failed calls across %d hot swaps under load (%g calls/s)", s.SwapsLanded, r.Swap.Rate)
		measured := fmt.Sprintf("%d of %d calls", s.Failures, s.Calls)
		switch {
		case s.Failures > 0:
			r.Goals = append(r.Goals, Goal{What: what, Target: failTarget, Measured: measured, Status: "missed"})
		case s.SwapsLanded >= swapGoalSwaps:
			r.Goals = append(r.Goals, Goal{What: what, Target: failTarget, Measured: measured, Status: "met"})
		default:
			// No failure, but too few swaps to hold against the target.
			r.Goals = append(r.Goals, Goal{What: what, Target: failTarget, Measured: fmt.Sprintf("%s, over only %d swaps", measured, s.SwapsLanded), Status: "not measured"})
		}
		goal("p99 during hot swaps / p99 without (same round, median)", "<= 2x", fmt.Sprintf("%.2fx (%s vs %s)", s.P99Ratio, fmtDur(s.With.P99), fmtDur(s.Without.P99)),
			s.P99Ratio <= 2, len(s.P99Ratios) > 0)
	} else {
		goal("failed calls across hot swaps under load", failTarget, "", false, false)
		goal("p99 during hot swaps / p99 without", "<= 2x", "", false, false)
	}
}

func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func signedDur(d time.Duration) string {
	if d >= 0 {
		return "+" + fmtDur(d)
	}
	return fmtDur(d)
}

func fmtMiB(b int64) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

func (r *Report) writeMarkdown(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Results\n\n")
	p("- date: %s; machine: %d cores, %s; commit %s; %s\n", r.Date, r.Cores, r.CPU, r.Commit, r.GoVersion)
	p("- command: `%s` (took %s)\n", r.Command, r.Took)
	p("- load average (1, 5, 15 min) before: %s; after: %s\n", r.LoadBefore, r.LoadAfter)
	if r.Chain != "" {
		p("- quickstart chain: %s\n", r.Chain)
	}
	if len(r.Binaries) > 0 {
		var parts []string
		for _, b := range r.Binaries {
			parts = append(parts, fmt.Sprintf("%s %s", b.Name, fmtMiB(b.Bytes)))
		}
		p("- binaries (go build, no flags): %s\n", strings.Join(parts, "; "))
	}
	p("\n")

	if len(r.Calls.Summary) > 0 {
		p("### tools/call\n\n")
		p("Tool `%s`, %d measured calls per target per round after %d warm-up calls, one session per target, %d rounds round-robin; medians over rounds, ratios to direct in the same round. RSS is the gateway process's VmRSS after its measurement (the server's for direct), then its anonymous part (RssAnon: the process's own) and its file-backed part (RssFile: the binary's pages, shared by every process of the same binary).\n\n",
			r.Calls.Tool, r.Calls.CallsPerRound, r.Calls.Warmup, r.Calls.Rounds)
		p("| target | c | p50 | p99 | calls/s | p50 / direct | calls/s / direct | RSS | anon | file | failures |\n")
		p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, s := range r.Calls.Summary {
			p("| %s | %d | %s | %s | %.0f | %.2fx | %.2fx | %s | %s | %s | %d |\n", s.Target, s.Concurrency, fmtDur(s.P50), fmtDur(s.P99), s.CallsPerSec, s.P50Ratio, s.CPSRatio,
				fmtMiB(s.RSS), fmtMiB(s.RSSAnon), fmtMiB(s.RSSFile), s.Failures)
		}
		p("\nCPU time per call (from /proc/PID/stat, 10 ms ticks, totals over all rounds, warm-up calls included): the gateway process alone, the gateway with the processes it started (the upstream server it runs; plus the direct server for the HTTP upstream; for direct, the server), and the bench client in this process.\n\n")
		p("| target | c | gateway CPU/call | server side CPU/call | client CPU/call |\n|---|--:|--:|--:|--:|\n")
		for _, s := range r.Calls.Summary {
			p("| %s | %d | %s | %s | %s |\n", s.Target, s.Concurrency, fmtDur(s.GatewayCPU), fmtDur(s.ServerCPU), fmtDur(s.ClientCPU))
		}
		for _, c := range r.Calls.Concurrency {
			if d, ok := r.chainOverhead(c); ok {
				p("\nQuickstart chain over no plugins, c=%d: %s at p50 (median of per-round differences).\n", c, signedDur(d))
			}
		}
		if len(r.Calls.PeakRSS) > 0 {
			p("\nPeak RSS (VmHWM) over the whole section: ")
			var parts []string
			for _, b := range r.Calls.PeakRSS {
				parts = append(parts, fmt.Sprintf("%s %s", b.Name, fmtMiB(b.Bytes)))
			}
			p("%s.\n", strings.Join(parts, "; "))
		}
		p("\n")
	}

	if len(r.Startup) > 0 {
		p("### Start-up and idle RSS\n\n")
		p("`mcphost run` from exec to its \"serving\" line (logged once every upstream connected and the listener is bound; /healthz checked after), one stdio upstream (everything-server). Idle RSS is VmRSS %s after ready plus one tools/list and one call.\n\n", "a moment")
		p("| config | starts | ready p50 | min | max | of which loading plugins (p50) | idle RSS p50 | anon | file |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, s := range r.Startup {
			if len(s.Samples) == 0 {
				p("| %s | 0 | — | — | — | — | — | — | — |\n", s.Config)
				continue
			}
			m, lo, hi := s.ready()
			load := "—"
			if d := s.pluginLoad(); d > 0 {
				load = fmtDur(d)
			}
			anon, file := s.parts()
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", s.Config, len(s.Samples), fmtDur(m), fmtDur(lo), fmtDur(hi), load, fmtMiB(s.rss()), fmtMiB(anon), fmtMiB(file))
		}
		p("\n")
	}

	if len(r.List.Results) > 0 {
		p("### tools/list of many tools\n\n")
		p("%d stdio upstreams of %d tools each (plus one `bump` tool each), every page listed over streamable HTTP. \"raw\" is a minimal HTTP client that reads the JSON-RPC response without decoding it (the server's time); \"go-sdk\" is `ClientSession.Tools`, which also decodes every tool. \"After a change\": an upstream's tools changed, the go-sdk session got notifications/tools/list_changed, then the raw client listed; \"change visible\" is from the call that changed the upstream to the end of that list.\n\n", r.List.Upstreams, r.List.ToolsPerUpstream)
		p("| path | tools | cached p50 (raw) | cached p90 (raw) | cached p50 (go-sdk) | after a change p50 (raw) | after a change max | change visible p50 |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, l := range r.List.Results {
			if l.Error != "" {
				p("| %s | %d | failed: %s | | | | | |\n", l.Path, l.Tools, l.Error)
				continue
			}
			if l.Changes == 0 {
				p("| %s | %d | %s | %s | %s | — | — | — |\n", l.Path, l.Tools, fmtDur(l.Cached.P50), fmtDur(l.Cached.P90), fmtDur(l.SDKCached.P50))
				continue
			}
			p("| %s | %d | %s | %s | %s | %s | %s | %s |\n", l.Path, l.Tools, fmtDur(l.Cached.P50), fmtDur(l.Cached.P90), fmtDur(l.SDKCached.P50), fmtDur(l.AfterChange.P50), fmtDur(l.AfterChange.Max), fmtDur(l.ChangeVisible.P50))
		}
		p("\n")
	}

	if s := r.Swap.Summary; s != nil {
		r.writeSwap(w, s)
	}

	if len(r.Goals) > 0 {
		p("### Targets\n\n| target | goal | measured | status |\n|---|---|---|---|\n")
		for _, g := range r.Goals {
			p("| %s | %s | %s | %s |\n", g.What, g.Target, g.Measured, g.Status)
		}
		p("\n")
	}

	for _, pr := range r.Profiles {
		p("### CPU profile: %s\n\n", pr.Config)
		p("gatewayprof (mcphost's decoder, plugin manager and host), %s for %s: %d requests, %.0f/s. `go tool pprof -top %s`:\n\n```\n%s```\n\nWith -cum:\n\n```\n%s```\n\n", pr.Load, pr.Duration, pr.Calls, pr.CallsPerSec, pr.File, pr.Top, pr.TopCum)
	}

	if len(r.Notes) > 0 {
		p("### Notes from the run\n\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
		p("\n")
	}
}

func (r *Report) writeSwap(w io.Writer, s *SwapSummary) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("### Hot swap under load\n\n")
	p("mcphost with the quickstart chain and one stdio upstream; tools/call of `%s` started at a steady %g calls/s (open loop, up to %d in flight; latency from each call's scheduled start). %d rounds, each a %s window without swaps and a %s window with %d swaps, one every %s (the first runs first in odd rounds). A swap rewrites the config file with a new `config` for plugin %q (a new title for the tool) and sends SIGHUP; each was confirmed by mcphost's log (a new plugin generation, then `reloaded`) and the last title of each window by tools/list. Medians over rounds; the ratio is p99 with swaps over p99 without from the same round.\n\n",
		r.Swap.Tool, r.Swap.Rate, r.Swap.Workers, r.Swap.Rounds, fmtDur(r.Swap.Window), fmtDur(r.Swap.Window), r.Swap.SwapsPerWindow, fmtDur(r.Swap.Interval), r.Swap.Plugin)
	p("| window | windows | calls | p50 | p99 | max | most in flight | failed |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, k := range []struct {
		name string
		s    SwapKindSummary
	}{{swapWithout, s.Without}, {fmt.Sprintf("with %d swaps", r.Swap.SwapsPerWindow), s.With}} {
		p("| %s | %d | %d | %s | %s | %s | %d | %d |\n", k.name, k.s.Windows, k.s.Calls, fmtDur(k.s.P50), fmtDur(k.s.P99), fmtDur(k.s.Max), k.s.MaxInFlight, k.s.Failures)
	}
	var ratios []string
	for _, x := range s.P99Ratios {
		ratios = append(ratios, fmt.Sprintf("%.2f", x))
	}
	p("\np99 with swaps / p99 without, same round: **%.2fx** (median; by round: %s). Failed calls over every window: **%d** of %d", s.P99Ratio, strings.Join(ratios, ", "), s.Failures, s.Calls)
	if s.FirstError != "" {
		p(" (first: %s)", s.FirstError)
	}
	p(".\n\n")
	p("Swaps: %d requested, %d landed (confirmed in the log), %d of them before their window's calls ended; the latest a swap started after its slot: %s. Reload time as mcphost logs it (`plugins swapped in ... took`, building the new generation): p50 %s, max %s; from SIGHUP to the `reloaded` line read here: p50 %s, max %s.\n\n",
		s.SwapsRequested, s.SwapsLanded, s.LandedInWindow, fmtDur(s.MaxLag), fmtDur(s.ReloadTookP50), fmtDur(s.ReloadTookMax), fmtDur(s.ReloadSeenP50), fmtDur(s.ReloadSeenMax))
	p("| round | window | calls | p50 | p99 | max | failed | load average after |\n|--:|---|--:|--:|--:|--:|--:|---|\n")
	for _, x := range r.Swap.Samples {
		if x.Result == nil {
			continue
		}
		p("| %d | %s | %d | %s | %s | %s | %d | %s |\n", x.Round, x.Kind, x.Result.Calls, fmtDur(x.Result.P50), fmtDur(x.Result.P99), fmtDur(x.Result.Max), x.Result.Failures, x.Load)
	}
	p("\n")
}
