package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcphost-project/mcphost/internal/bench"
)

const benchUsage = `usage: mcphost bench TARGET --tool NAME [--args JSON] [--calls N] [--concurrency C]
                     [--rate N] [--duration D] [--warmup N] [--transport T] [--token TOKEN] [--json]

TARGET is one of:
  http://HOST:PORT/mcp        streamable HTTP
  http://HOST:PORT/sse        SSE (or any URL with --transport sse)
  stdio:COMMAND ARGS          a local server over stdio (split on spaces)
  -- COMMAND ARGS...          the same, everything after -- (put it last)

Warm-up calls are not counted. Without --calls or --duration, 1000 calls.

Calls run back to back, --concurrency at a time, unless --rate is given:
then they start on a fixed schedule, N a second, however long earlier calls
take (up to --concurrency in flight, default 64), and each latency is
measured from the call's scheduled start, so a stall shows in every call it
held up.
`

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// Everything after the first "--" is the stdio command, flags included.
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], slices.Clone(args[i+1:])
		if len(command) == 0 {
			fmt.Fprintln(stderr, "mcphost bench: -- needs a command after it")
			return exitError(2)
		}
	}
	fs := newFlagSet("bench", benchUsage, stdout, stderr)
	tool := fs.String("tool", "", "the tool to call (required)")
	argsJSON := fs.String("args", "", "the tool's arguments, a JSON object")
	calls := fs.Int("calls", 0, "measured calls to make (default 1000 unless --duration is set)")
	conc := fs.Int("concurrency", 1, fmt.Sprintf("calls in flight at once, on one session (with --rate: the most in flight, default %d)", bench.DefaultRateWorkers))
	rate := fs.Float64("rate", 0, "start calls on a fixed schedule, this many a second, instead of back to back")
	dur := fs.Duration("duration", 0, "measure for this long (with --calls, whichever ends first)")
	warmup := fs.Int("warmup", bench.DefaultWarmup, "warm-up calls, not counted (at least 1: the first call must succeed)")
	transport := fs.String("transport", "", `"streamable", "sse" or "stdio" (default: from the target)`)
	token := fs.String("token", envToken(), "bearer token for an HTTP target (default $MCPHOST_TOKEN)")
	protocol := fs.String("protocol-version", "", "MCP protocol version to ask for (default: the go-sdk's latest)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || *tool == "" {
		return fs.misuse()
	}
	spec := ""
	if len(pos) == 1 {
		spec = pos[0]
	}
	target, err := bench.ParseTarget(spec, command, *transport)
	if err != nil {
		fmt.Fprintf(stderr, "mcphost bench: %v\n\n", strings.TrimPrefix(err.Error(), "bench: "))
		fs.Usage()
		return exitError(2)
	}
	if *token != "" && target.Transport != bench.TransportStdio {
		target.Header = http.Header{"Authorization": {"Bearer " + *token}}
	}
	target.ProtocolVersion = *protocol
	var raw json.RawMessage
	if *argsJSON != "" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(*argsJSON), &obj); err != nil {
			fmt.Fprintf(stderr, "mcphost bench: --args is not a JSON object: %v\n", err)
			return exitError(2)
		}
		raw = json.RawMessage(*argsJSON)
	}
	if *calls < 0 || *dur < 0 || *conc < 1 || *rate < 0 || math.IsNaN(*rate) || math.IsInf(*rate, 0) {
		fmt.Fprintln(stderr, "mcphost bench: --calls, --duration and --rate must not be negative, --concurrency at least 1")
		return exitError(2)
	}
	if *rate > 0 && !flagGiven(fs.FlagSet, "concurrency") {
		*conc = 0 // bench.Options reads 0 as DefaultRateWorkers
	}
	if *warmup == 0 {
		*warmup = 1 // bench.Options reads 0 as the default
	}

	connectCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cs, err := target.Connect(connectCtx)
	cancel()
	if err != nil {
		return err
	}
	defer cs.Close()

	opts := bench.Options{Tool: *tool, Args: raw, Calls: *calls, Duration: *dur, Concurrency: *conc, Rate: *rate, Warmup: *warmup}
	// Progress only on long runs: in place on a terminal, else a line now
	// and then so logs show the run is alive.
	p := &progressLine{w: stderr, tty: isTerminal(stderr)}
	opts.ProgressEvery = 5 * time.Second
	if p.tty {
		opts.ProgressEvery = time.Second
	}
	opts.Progress = p.show
	res, err := bench.Run(ctx, cs, opts)
	p.clear()
	if err != nil {
		return err
	}
	res.Target = target.String()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printBench(stdout, res)
	if res.Failures > 0 {
		return exitError(1)
	}
	return nil
}

// flagGiven reports whether the command line gave the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func printBench(w io.Writer, r *bench.Result) {
	fmt.Fprintf(w, "target       %s\n", r.Target)
	if r.Rate > 0 {
		fmt.Fprintf(w, "tool         %s (%s calls/s scheduled, up to %d in flight, at most %d were; %d warm-up calls not counted)\n",
			r.Tool, strconv.FormatFloat(r.Rate, 'f', -1, 64), r.Concurrency, r.MaxInFlight, r.Warmup)
	} else {
		fmt.Fprintf(w, "tool         %s (concurrency %d, %d warm-up calls not counted)\n", r.Tool, r.Concurrency, r.Warmup)
	}
	fmt.Fprintf(w, "calls        %d in %s\n", r.Calls, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "failures     %d", r.Failures)
	if r.FirstError != "" {
		fmt.Fprintf(w, " (first: %s)", oneLine(r.FirstError))
	}
	fmt.Fprintln(w)
	if r.Rate > 0 {
		fmt.Fprintln(w, "latencies from each call's scheduled start:")
	}
	fmt.Fprintf(w, "p50          %s\n", fmtLatency(r.P50))
	fmt.Fprintf(w, "p90          %s\n", fmtLatency(r.P90))
	fmt.Fprintf(w, "p99          %s\n", fmtLatency(r.P99))
	fmt.Fprintf(w, "min/mean/max %s / %s / %s\n", fmtLatency(r.Min), fmtLatency(r.Mean), fmtLatency(r.Max))
	fmt.Fprintf(w, "calls/s      %.0f\n", r.CallsPerSec)
}

func fmtLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Millisecond).String()
}

// progressLine writes bench progress to stderr.
type progressLine struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	shown bool
}

func (p *progressLine) show(pr bench.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rate := float64(pr.Done) / pr.Elapsed.Seconds()
	var of string
	switch {
	case pr.Total > 0:
		of = fmt.Sprintf("%d/%d calls", pr.Done, pr.Total)
	default:
		of = fmt.Sprintf("%d calls, %s/%s", pr.Done, pr.Elapsed.Round(time.Second), pr.Duration)
	}
	line := fmt.Sprintf("bench: %s, %d failed, %.0f calls/s", of, pr.Failures, rate)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.shown = true
}

func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
