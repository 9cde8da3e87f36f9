// Command compare measures mcphost against a direct connection, the npm
// gateways people use today and a Go gateway built on mcp-go, in one run,
// and prints markdown tables.
//
//	go run ./internal/bench/compare -short           # a quick check (CI)
//	go run ./internal/bench/compare -profile cpu.pprof # the recorded run
//
// Run it from the repository root. It builds mcphost, the go-sdk's
// everything-server, a many-tools test server and the mcp-go gateway of
// internal/bench/peers/mcpgo (a module of its own) into a temporary
// directory, starts every server on 127.0.0.1 in its own process group, and
// stops them all on exit (also on Ctrl-C). Sections:
//
//   - calls: tools/call of a no-argument tool, round-robin over the targets
//     at each concurrency, medians over the rounds;
//   - startup: `mcphost run` to its "serving" line with every upstream
//     connected, with no plugins and with the quickstart chain (cold and
//     warm compile cache), and the idle RSS after each;
//   - list: tools/list of 1000 tools over 10 upstreams, cached and right
//     after an upstream's tools changed;
//   - swap: calls at a steady rate through the quickstart chain, in windows
//     without and with hot swaps of a plugin (config rewritten, SIGHUP);
//   - profile (with -profile): a CPU profile of the gateway under load.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcphost-project/mcphost/internal/bench"
)

type options struct {
	short         bool
	rounds        int
	calls         int
	warmup        int
	concurrency   []int
	tool          string
	sections      map[string]bool
	pluginsConfig string
	npmCache      string
	node          string
	noNPM         bool
	noMCPGo       bool
	noNewProtocol bool
	profile       string
	profileTime   time.Duration
	jsonOut       string
	mdOut         string
	mcphostBin    string
	keep          bool
	startRounds   int
	listRounds    int
	changeRounds  int
	idleSettle    time.Duration
	upstreams     int
	toolsEach     int
	swaps         int
	swapRounds    int
	swapRate      float64
	swapInterval  time.Duration
	swapPlugin    string
	env           stringList
	mcphostB      string
	everything    string
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var o options
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	fs.BoolVar(&o.short, "short", false, "a quick run: fewer rounds and calls (for CI)")
	fs.IntVar(&o.rounds, "rounds", 0, "rounds over every target (default 5, 2 with -short)")
	fs.IntVar(&o.calls, "calls", 0, "measured calls per target per round (default 1000, 300 with -short)")
	fs.IntVar(&o.warmup, "warmup", 0, "warm-up calls before each measurement (default 100, 50 with -short)")
	conc := fs.String("concurrency", "1,4", "concurrencies to measure, comma-separated")
	fs.StringVar(&o.tool, "tool", "test_simple_text", "the everything-server tool to call (takes no arguments)")
	sections := fs.String("sections", "calls,startup,list,swap", "sections to run: calls, startup, list, swap (profile runs with -profile)")
	fs.StringVar(&o.pluginsConfig, "plugins-config", "examples/quickstart/config.hcl", "config whose plugin blocks make the quickstart chain")
	fs.StringVar(&o.npmCache, "npm-cache", defaultNPMCache(), "directory to npm-install supergateway and mcp-proxy into")
	fs.StringVar(&o.node, "node", "", "node binary for the npm gateways (default: .ci/.cache/bin/node if present, else node)")
	fs.BoolVar(&o.noNPM, "no-npm", false, "skip the npm gateways")
	fs.BoolVar(&o.noMCPGo, "no-mcpgo", false, "skip the mcp-go gateway (the stand-in for TBXark/mcp-proxy)")
	fs.BoolVar(&o.noNewProtocol, "no-2026", false, "skip the rows of clients asking for protocol 2026-07-28 (direct and mcphost with no plugins)")
	fs.StringVar(&o.profile, "profile", "", "write a CPU profile of the gateway under load to this file and print its top")
	fs.DurationVar(&o.profileTime, "profile-time", 15*time.Second, "how long to load the gateway while profiling")
	fs.StringVar(&o.jsonOut, "json", "", "also write every figure as JSON to this file")
	fs.StringVar(&o.mdOut, "o", "", "also write the markdown report to this file")
	fs.StringVar(&o.mcphostBin, "mcphost", "", "use this mcphost binary instead of building ./cmd/mcphost")
	fs.StringVar(&o.mcphostB, "mcphost-b", "", "also measure this mcphost binary (a branch's build, say) as one more tools/call target, no plugins")
	fs.StringVar(&o.everything, "everything", "", "use this everything-server binary (direct target and upstream) instead of building the go-sdk's")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configs, binaries, logs)")
	fs.IntVar(&o.startRounds, "startup-rounds", 0, "start-ups per config (default 5, 2 with -short)")
	fs.IntVar(&o.listRounds, "list-rounds", 0, "cached tools/list calls per config (default 50, 10 with -short)")
	fs.IntVar(&o.changeRounds, "change-rounds", 0, "tools/list calls after a change per config (default 10, 3 with -short)")
	fs.DurationVar(&o.idleSettle, "idle-settle", 2*time.Second, "wait after start-up and one call before reading idle RSS")
	fs.IntVar(&o.upstreams, "list-upstreams", 10, "upstreams for the tools/list measurement")
	fs.IntVar(&o.toolsEach, "list-tools", 100, "tools per upstream for the tools/list measurement")
	fs.IntVar(&o.swaps, "swaps", 0, "hot swaps per window of the swap section (default 100, 20 with -short)")
	fs.IntVar(&o.swapRounds, "swap-rounds", 0, "rounds of the swap section, each a window without and one with swaps (default 5, 3 with -short)")
	fs.Float64Var(&o.swapRate, "swap-rate", 200, "calls per second during the swap section")
	fs.DurationVar(&o.swapInterval, "swap-interval", 100*time.Millisecond, "time between hot swaps; a window lasts -swaps times this")
	fs.StringVar(&o.swapPlugin, "swap-plugin", "titles", "the plugin of the chain whose config each swap changes (a builtin:titles)")
	fs.Var(&o.env, "env", "KEY=VALUE for every mcphost process (GOGC=200, say); repeatable")
	_ = fs.Parse(os.Args[1:])

	def := func(v *int, full, short int) {
		if *v <= 0 {
			*v = full
			if o.short {
				*v = short
			}
		}
	}
	def(&o.rounds, 5, 2)
	def(&o.calls, 1000, 300)
	def(&o.warmup, 100, 50)
	def(&o.startRounds, 5, 2)
	def(&o.listRounds, 50, 10)
	def(&o.changeRounds, 10, 3)
	def(&o.swaps, 100, 20)
	def(&o.swapRounds, 5, 3)
	if o.swapRate <= 0 || o.swapInterval <= 0 {
		fmt.Fprintln(os.Stderr, "compare: -swap-rate and -swap-interval must be positive")
		os.Exit(2)
	}
	for _, s := range strings.Split(*conc, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 {
			fmt.Fprintf(os.Stderr, "compare: bad -concurrency %q\n", *conc)
			os.Exit(2)
		}
		o.concurrency = append(o.concurrency, c)
	}
	o.sections = map[string]bool{}
	for _, s := range strings.Split(*sections, ",") {
		o.sections[strings.TrimSpace(s)] = true
	}
	if o.profile != "" {
		o.sections["profile"] = true
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func defaultNPMCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "mcphost-bench", "npm")
}

func run(ctx context.Context, o options, argv []string) error {
	h, err := newHarness(o)
	if err != nil {
		return err
	}
	defer h.close()
	r := &h.report
	r.Command = "go run ./internal/bench/compare " + strings.Join(argv[1:], " ")
	r.machineInfo(h.repo)
	start := time.Now()

	if err := h.build(ctx); err != nil {
		return err
	}
	h.loadPlugins()
	if o.sections["calls"] {
		if err := h.measureCalls(ctx); err != nil {
			return err
		}
	}
	if o.sections["startup"] {
		if err := h.measureStartup(ctx); err != nil {
			return err
		}
	}
	if o.sections["list"] {
		if err := h.measureList(ctx); err != nil {
			return err
		}
	}
	if o.sections["swap"] {
		if err := h.measureSwap(ctx); err != nil {
			return err
		}
	}
	if o.sections["profile"] {
		if err := h.measureProfile(ctx); err != nil {
			h.note("profile: %v", err)
		}
	}
	r.LoadAfter = loadavg()
	r.Took = time.Since(start).Round(time.Second).String()
	r.evaluate()

	var out io.Writer = os.Stdout
	if o.mdOut != "" {
		f, err := os.Create(o.mdOut)
		if err != nil {
			return err
		}
		defer f.Close()
		out = io.MultiWriter(os.Stdout, f)
	}
	r.writeMarkdown(out)
	if o.jsonOut != "" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// harness owns the work directory and every process it started.
type harness struct {
	o      options
	repo   string
	work   string
	bins   struct{ mcphost, everything, manytools, gatewayprof, mcpgo string }
	procs  []*bench.Process
	chain  string // the quickstart plugin blocks, sources made absolute; "" if none
	report Report

	// mcpgoErr is why the mcp-go gateway did not build; its target is then
	// skipped with a note, like an npm gateway that does not install.
	mcpgoErr error
}

func newHarness(o options) (*harness, error) {
	repo, err := repoRoot()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "mcphost-bench-")
	if err != nil {
		return nil, err
	}
	h := &harness{o: o, repo: repo, work: work}
	h.report.LoadBefore = loadavg()
	return h, nil
}

func (h *harness) close() {
	for _, p := range slices.Backward(h.procs) {
		_ = p.Stop(3 * time.Second)
	}
	if h.o.keep {
		fmt.Fprintf(os.Stderr, "compare: work directory kept: %s\n", h.work)
		return
	}
	_ = os.RemoveAll(h.work)
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "compare: "+format+"\n", args...)
}

func (h *harness) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	h.report.Notes = append(h.report.Notes, s)
	h.logf("note: %s", s)
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/mcphost-project/mcphost\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the mcphost repository")
		}
		dir = parent
	}
}

// build compiles every binary the run starts.
func (h *harness) build(ctx context.Context) error {
	h.bins.mcphost = filepath.Join(h.work, "mcphost")
	h.bins.everything = filepath.Join(h.work, "everything-server")
	h.bins.manytools = filepath.Join(h.work, "manytools")
	h.bins.gatewayprof = filepath.Join(h.work, "gatewayprof")
	builds := [][2]string{{h.bins.manytools, "./internal/bench/testdata/manytools"}}
	if h.o.everything != "" {
		abs, err := filepath.Abs(h.o.everything)
		if err != nil {
			return err
		}
		h.bins.everything = abs
	} else {
		builds = append(builds, [2]string{h.bins.everything, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"})
	}
	if h.o.mcphostBin != "" {
		abs, err := filepath.Abs(h.o.mcphostBin)
		if err != nil {
			return err
		}
		h.bins.mcphost = abs
	} else {
		builds = append(builds, [2]string{h.bins.mcphost, "./cmd/mcphost"})
	}
	if h.o.sections["profile"] {
		builds = append(builds, [2]string{h.bins.gatewayprof, "./internal/bench/testdata/gatewayprof"})
	}
	for _, b := range builds {
		h.logf("building %s", b[1])
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b[0], b[1])
		cmd.Dir = h.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	if h.o.sections["calls"] && !h.o.noMCPGo {
		h.bins.mcpgo, h.mcpgoErr = h.buildMCPGo(ctx)
	}
	for _, b := range [][2]string{{"mcphost", h.bins.mcphost}, {nameMCPGo, h.bins.mcpgo}} {
		if fi, err := os.Stat(b[1]); b[1] != "" && err == nil {
			h.report.Binaries = append(h.report.Binaries, NamedBytes{Name: b[0], Bytes: fi.Size()})
		}
	}
	return nil
}

// buildMCPGo builds the mcp-go gateway. It is a module of its own (so the
// main module does not depend on mcp-go), built with go build -C; a
// failure, such as mcp-go not downloading, is returned for a note, not as
// the run's.
func (h *harness) buildMCPGo(ctx context.Context) (string, error) {
	bin := filepath.Join(h.work, "mcpgo-gateway")
	h.logf("building %s (its own module)", mcpgoDir)
	cmd := exec.CommandContext(ctx, "go", "build", "-C", filepath.Join(h.repo, filepath.FromSlash(mcpgoDir)), "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -C %s: %v: %s", mcpgoDir, err, lastLines(string(out), 3))
	}
	return bin, nil
}

// start starts a server process and registers it for clean-up.
func (h *harness) start(name string, args []string, env ...string) (*bench.Process, error) {
	p, err := bench.StartProcess(name, args, h.work, env)
	if err != nil {
		return nil, err
	}
	h.procs = append(h.procs, p)
	return p, nil
}

// stop stops a process started by start and forgets it.
func (h *harness) stop(p *bench.Process) {
	if p == nil {
		return
	}
	_ = p.Stop(3 * time.Second)
	h.procs = slices.DeleteFunc(h.procs, func(q *bench.Process) bool { return q == p })
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func (r *Report) machineInfo(repo string) {
	r.Date = time.Now().UTC().Format("2006-01-02")
	r.Cores = runtime.NumCPU()
	if out, err := exec.Command("nproc").Output(); err == nil {
		r.Cores, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				r.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	cmd := exec.Command("git", "rev-parse", "--short", "HEAD")
	cmd.Dir = repo
	if out, err := cmd.Output(); err == nil {
		r.Commit = strings.TrimSpace(string(out))
	}
	r.GoVersion = runtime.Version()
}
