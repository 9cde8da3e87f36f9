// Package bench measures MCP tools/call latency and throughput against any
// MCP server: a streamable HTTP or SSE URL, or a command spoken to over
// stdio. It is the engine of `mcphost bench` and of the gateway comparison
// in internal/bench/compare.
//
// A run opens one client session, makes warm-up calls that are not
// counted, then keeps Concurrency calls in flight on that session until it
// has made Calls calls or Duration has passed, and reports latency
// percentiles and calls per second. With a Rate, calls start on a fixed
// schedule instead (an open loop), and each latency runs from the call's
// scheduled start.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transports a Target can use.
const (
	TransportStreamable = "streamable" // streamable HTTP, the default for URLs
	TransportSSE        = "sse"        // the 2024-11-05 HTTP+SSE transport
	TransportStdio      = "stdio"      // a command spoken to over stdin/stdout
)

// ErrNoTarget is returned by ParseTarget when nothing names a server.
var ErrNoTarget = errors.New("bench: no target: give a URL, stdio:COMMAND or -- COMMAND ARGS")

// Target names an MCP server to measure.
type Target struct {
	// Transport is TransportStreamable, TransportSSE or TransportStdio.
	Transport string
	// URL is the endpoint of an HTTP transport.
	URL string
	// Command is the program and arguments of a stdio server.
	Command []string
	// Header is sent with every HTTP request (an Authorization token, say).
	Header http.Header
	// ProtocolVersion, if set, is the version the client asks for; empty
	// means the go-sdk's latest.
	ProtocolVersion string
}

// ParseTarget builds a Target from the command line: spec is a URL or
// "stdio:CMD ARGS" (split on spaces, no quoting), command is whatever came
// after "--", and transport, if not empty, overrides the guess (a URL whose
// path ends in /sse is SSE, any other URL streamable HTTP).
func ParseTarget(spec string, command []string, transport string) (Target, error) {
	switch transport {
	case "", TransportStreamable, TransportSSE, TransportStdio:
	case "http", "streamable-http":
		transport = TransportStreamable
	default:
		return Target{}, fmt.Errorf("bench: unknown transport %q (want %s, %s or %s)", transport, TransportStreamable, TransportSSE, TransportStdio)
	}
	if rest, ok := strings.CutPrefix(spec, "stdio:"); ok {
		if len(command) > 0 {
			return Target{}, errors.New("bench: give the stdio command either as stdio:COMMAND or after --, not both")
		}
		command, spec = strings.Fields(rest), ""
		if len(command) == 0 {
			return Target{}, errors.New("bench: stdio: needs a command")
		}
	}
	switch {
	case spec != "" && len(command) > 0:
		return Target{}, fmt.Errorf("bench: give a URL or a command, not both (%q and %q)", spec, strings.Join(command, " "))
	case len(command) > 0:
		if transport != "" && transport != TransportStdio {
			return Target{}, fmt.Errorf("bench: a command is spoken to over stdio, not %s", transport)
		}
		return Target{Transport: TransportStdio, Command: command}, nil
	case spec == "":
		return Target{}, ErrNoTarget
	}
	u, err := url.Parse(spec)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, fmt.Errorf("bench: target %q is not an http(s) URL; for a local program use stdio:COMMAND or -- COMMAND ARGS", spec)
	}
	if transport == TransportStdio {
		return Target{}, errors.New("bench: --transport stdio needs a command, not a URL")
	}
	if transport == "" {
		transport = TransportStreamable
		if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse") {
			transport = TransportSSE
		}
	}
	return Target{Transport: transport, URL: spec}, nil
}

// String describes the target for reports.
func (t Target) String() string {
	if t.Transport == TransportStdio {
		return "stdio:" + strings.Join(t.Command, " ")
	}
	if t.Transport == TransportSSE && !strings.HasSuffix(strings.TrimRight(t.URL, "/"), "/sse") {
		return t.URL + " (sse)"
	}
	return t.URL
}

// Connect opens a client session. For a stdio target it starts the command,
// which ends when the session closes.
func (t Target) Connect(ctx context.Context) (*mcp.ClientSession, error) {
	return t.ConnectWith(ctx, nil)
}

// ConnectWith is Connect with client options (handlers for notifications,
// say); opts may be nil.
func (t Target) ConnectWith(ctx context.Context, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	var tr mcp.Transport
	switch t.Transport {
	case TransportStdio:
		if len(t.Command) == 0 {
			return nil, errors.New("bench: stdio target without a command")
		}
		cmd := exec.Command(t.Command[0], t.Command[1:]...)
		tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	case TransportSSE:
		tr = &mcp.SSEClientTransport{Endpoint: t.URL, HTTPClient: t.httpClient()}
	case TransportStreamable, "":
		tr = &mcp.StreamableClientTransport{Endpoint: t.URL, HTTPClient: t.httpClient(), MaxRetries: -1}
	default:
		return nil, fmt.Errorf("bench: unknown transport %q", t.Transport)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcphost-bench", Version: "1.0.0"}, opts)
	var sopts *mcp.ClientSessionOptions
	if t.ProtocolVersion != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: t.ProtocolVersion}
	}
	// ctx bounds the connection, not the session: the SSE transport keeps
	// the context of Connect for its event stream, so the session gets one
	// of its own that ctx cancels only until Connect returns.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	detach := context.AfterFunc(ctx, scancel)
	cs, err := client.Connect(sctx, tr, sopts)
	detach()
	if err != nil {
		scancel()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("bench: connecting to %s: %w", t, err)
	}
	return cs, nil
}

// httpClient keeps enough idle connections for every call in flight: the
// default of two per host would open and close connections under load and
// measure that instead.
func (t Target) httpClient() *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConns = 256
	base.MaxIdleConnsPerHost = 256
	var rt http.RoundTripper = base
	if len(t.Header) > 0 {
		rt = headerTransport{header: t.Header, next: base}
	}
	return &http.Client{Transport: rt}
}

type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// Options are the knobs of one run.
type Options struct {
	// Tool is the tool to call; required.
	Tool string
	// Args are its arguments (a JSON object); nil sends none.
	Args json.RawMessage
	// Calls is how many measured calls to make. With Duration set too, the
	// run ends at whichever comes first; with neither, 1000.
	Calls int
	// Duration bounds the measured part of the run.
	Duration time.Duration
	// Concurrency is how many calls are in flight at once (default 1). With
	// a Rate, it is the most calls in flight at once (default
	// DefaultRateWorkers).
	Concurrency int
	// Rate, if not zero, starts calls on a fixed schedule, Rate a second,
	// instead of back to back: an open loop, as clients that do not wait
	// for each other make. A slow call does not delay the next start (up
	// to Concurrency calls run at once), and each latency is measured from
	// the call's scheduled start, so a stall also counts in the calls it
	// held up (no coordinated omission). Warm-up calls keep the same pace.
	Rate float64
	// Warmup calls are made first, at the same concurrency, and not
	// counted (negative: none; zero: DefaultWarmup).
	Warmup int
	// Progress, if set, is called every ProgressEvery (default 1s) while
	// the measured calls run, from another goroutine.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// DefaultWarmup is the number of warm-up calls when Options.Warmup is 0.
const DefaultWarmup = 50

// DefaultRateWorkers is the most calls in flight at once of a run with a
// Rate when Options.Concurrency is 0: enough to ride out a stall of 0.3 s
// at 200 calls a second without holding a start back.
const DefaultRateWorkers = 64

// Validate reports the first option that is out of range.
func (o Options) Validate() error {
	switch {
	case o.Tool == "":
		return errors.New("bench: no tool to call")
	case o.Calls < 0:
		return fmt.Errorf("bench: calls %d is negative", o.Calls)
	case o.Duration < 0:
		return fmt.Errorf("bench: duration %s is negative", o.Duration)
	case o.Concurrency < 0:
		return fmt.Errorf("bench: concurrency %d is negative", o.Concurrency)
	case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("bench: rate %v is not a number of calls a second (nor 0, back to back)", o.Rate)
	}
	return nil
}

// Progress is the state of a run so far.
type Progress struct {
	Done     int           // calls finished
	Failures int           // of which failed
	Elapsed  time.Duration // since the measured calls began
	Total    int           // calls planned, 0 if bounded by time only
	Duration time.Duration // planned duration, 0 if bounded by calls only
}

// Result is what a run measured. Latencies are of every measured call,
// failed ones included.
type Result struct {
	Target string `json:"target,omitempty"`
	Tool   string `json:"tool"`
	// Concurrency is the calls in flight at once, or with a Rate the most
	// allowed; MaxInFlight is the most there were (with a Rate only).
	Concurrency int           `json:"concurrency"`
	Rate        float64       `json:"rate,omitempty"`
	MaxInFlight int           `json:"max_in_flight,omitempty"`
	Warmup      int           `json:"warmup"`
	Calls       int           `json:"calls"`
	Failures    int           `json:"failures"`
	FirstError  string        `json:"first_error,omitempty"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	CallsPerSec float64       `json:"calls_per_sec"`
	Stats
}

// Stats are latency percentiles, in nanoseconds when marshalled.
type Stats struct {
	Min  time.Duration `json:"min_ns"`
	Mean time.Duration `json:"mean_ns"`
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	Max  time.Duration `json:"max_ns"`
}

// Summarize computes Stats of latencies, which it sorts in place.
func Summarize(latencies []time.Duration) Stats {
	if len(latencies) == 0 {
		return Stats{}
	}
	slices.Sort(latencies)
	var sum time.Duration
	for _, l := range latencies {
		sum += l
	}
	return Stats{
		Min:  latencies[0],
		Mean: sum / time.Duration(len(latencies)),
		P50:  Percentile(latencies, 50),
		P90:  Percentile(latencies, 90),
		P99:  Percentile(latencies, 99),
		Max:  latencies[len(latencies)-1],
	}
}

// Percentile returns the nearest-rank p-th percentile of sorted values.
func Percentile[T ~int64 | ~float64](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.999999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// Median returns the median of values (the mean of the middle two for an
// even count), leaving values unchanged.
func Median[T ~int64 | ~float64](values []T) T {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Run measures tools/call of opts.Tool on an open session. The first
// warm-up call must succeed (a protocol error or an IsError result ends the
// run with an error), so a wrong tool name or argument fails fast instead of
// measuring errors. Run returns early with ctx's error if ctx ends.
func Run(ctx context.Context, cs *mcp.ClientSession, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var args any
	if len(opts.Args) > 0 {
		args = opts.Args
	}
	call := func() error {
		// A new params value per call: the go-sdk writes _meta into it.
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: opts.Tool, Arguments: args})
		if err != nil {
			return err
		}
		if res.IsError {
			return &ToolError{Text: resultText(res)}
		}
		return nil
	}
	if err := call(); err != nil {
		return nil, fmt.Errorf("bench: the first call of %s failed: %w", opts.Tool, err)
	}
	return measure(ctx, call, opts)
}

// measure makes the warm-up calls but the first, which Run made, and the
// measured calls, with opts already validated.
func measure(ctx context.Context, call func() error, opts Options) (*Result, error) {
	conc := opts.Concurrency
	if conc <= 0 {
		conc = 1
		if opts.Rate > 0 {
			conc = DefaultRateWorkers
		}
	}
	calls, dur := opts.Calls, opts.Duration
	if calls <= 0 && dur <= 0 {
		calls = 1000
	}
	warm := opts.Warmup
	if warm == 0 {
		warm = DefaultWarmup
	}
	warm = max(warm, 1) // the first call checks the tool works
	runs := runCalls
	if opts.Rate > 0 {
		runs = func(ctx context.Context, call func() error, conc, n int, dur time.Duration, progress func(Progress), every time.Duration) (*record, error) {
			return runPaced(ctx, call, opts.Rate, conc, n, dur, progress, every)
		}
	}
	if _, err := runs(ctx, call, conc, warm-1, 0, nil, 0); err != nil {
		return nil, err
	}
	rec, err := runs(ctx, call, conc, calls, dur, opts.Progress, opts.ProgressEvery)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Tool:        opts.Tool,
		Concurrency: conc,
		Rate:        opts.Rate,
		Warmup:      warm,
		Calls:       len(rec.latencies),
		Failures:    rec.failures,
		Elapsed:     rec.elapsed,
		Stats:       Summarize(rec.latencies),
	}
	if opts.Rate > 0 {
		res.MaxInFlight = rec.maxInFlight
	}
	if rec.firstErr != nil {
		res.FirstError = rec.firstErr.Error()
	}
	if rec.elapsed > 0 {
		res.CallsPerSec = float64(res.Calls) / rec.elapsed.Seconds()
	}
	return res, nil
}

// ToolError is a call whose result had IsError set.
type ToolError struct{ Text string }

func (e *ToolError) Error() string { return "tool error: " + e.Text }

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	s := b.String()
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

type record struct {
	latencies   []time.Duration
	failures    int
	firstErr    error
	elapsed     time.Duration
	maxInFlight int
}

// tally counts calls as they finish, from any goroutine.
type tally struct {
	ctx      context.Context
	done     atomic.Int64
	failed   atomic.Int64
	mu       sync.Mutex
	firstErr error
}

func (t *tally) add(err error) {
	t.done.Add(1)
	if err == nil || t.ctx.Err() != nil {
		return
	}
	t.failed.Add(1)
	t.mu.Lock()
	if t.firstErr == nil {
		t.firstErr = err
	}
	t.mu.Unlock()
}

// progress calls fn every interval until the returned stop is called.
func (t *tally) progress(fn func(Progress), every time.Duration, begin time.Time, n int, dur time.Duration) (stop func()) {
	if fn == nil {
		return func() {}
	}
	if every <= 0 {
		every = time.Second
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				fn(Progress{Done: int(t.done.Load()), Failures: int(t.failed.Load()), Elapsed: time.Since(begin), Total: max(n, 0), Duration: dur})
			}
		}
	})
	return func() {
		close(quit)
		wg.Wait()
	}
}

func (t *tally) record(elapsed time.Duration, perWorker [][]time.Duration) *record {
	rec := &record{elapsed: elapsed, failures: int(t.failed.Load()), firstErr: t.firstErr}
	for _, l := range perWorker {
		rec.latencies = append(rec.latencies, l...)
	}
	return rec
}

// runCalls keeps conc calls in flight until n calls started (n > 0) or dur
// passed (dur > 0).
func runCalls(ctx context.Context, call func() error, conc, n int, dur time.Duration, progress func(Progress), every time.Duration) (*record, error) {
	if n <= 0 && dur <= 0 {
		return &record{}, nil
	}
	var (
		started  atomic.Int64
		t        = &tally{ctx: ctx}
		wg       sync.WaitGroup
		deadline time.Time
	)
	begin := time.Now()
	if dur > 0 {
		deadline = begin.Add(dur)
	}
	perWorker := make([][]time.Duration, conc)
	for w := range conc {
		wg.Go(func() {
			lat := make([]time.Duration, 0, max(n/conc+1, 1024))
			for ctx.Err() == nil {
				if n > 0 && started.Add(1) > int64(n) {
					break
				}
				t0 := time.Now()
				if !deadline.IsZero() && t0.After(deadline) {
					break
				}
				err := call()
				lat = append(lat, time.Since(t0))
				t.add(err)
			}
			perWorker[w] = lat
		})
	}
	stop := t.progress(progress, every, begin, n, dur)
	wg.Wait()
	elapsed := time.Since(begin)
	stop()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return t.record(elapsed, perWorker), nil
}

// runPaced starts call on a fixed schedule, rate a second, until n calls
// started (n > 0) or the next start would come dur or more after the first
// (dur > 0), with up to workers calls in flight. A call's latency runs from
// its scheduled start, not from when a worker took it up: when calls back
// up behind a stall, the wait counts in each of them.
func runPaced(ctx context.Context, call func() error, rate float64, workers, n int, dur time.Duration, progress func(Progress), every time.Duration) (*record, error) {
	if n <= 0 && dur <= 0 {
		return &record{}, nil
	}
	var (
		t        = &tally{ctx: ctx}
		wg       sync.WaitGroup
		inFlight atomic.Int64
		peak     atomic.Int64
	)
	// The schedule is handed to the workers through a channel; a worker
	// that is free takes the next start. The dispatcher never waits for a
	// call, only, when every worker is busy, for one to be free.
	starts := make(chan time.Time, workers)
	perWorker := make([][]time.Duration, workers)
	for w := range workers {
		wg.Go(func() {
			var lat []time.Duration
			for at := range starts {
				if ctx.Err() != nil {
					continue // drain
				}
				k := inFlight.Add(1)
				for p := peak.Load(); k > p && !peak.CompareAndSwap(p, k); p = peak.Load() {
				}
				err := call()
				lat = append(lat, time.Since(at))
				inFlight.Add(-1)
				t.add(err)
			}
			perWorker[w] = lat
		})
	}
	begin := time.Now()
	stop := t.progress(progress, every, begin, n, dur)
	perCall := float64(time.Second) / rate
dispatch:
	for i := 0; n <= 0 || i < n; i++ {
		offset := time.Duration(float64(i) * perCall) // from i, not summed: no drift
		if dur > 0 && offset >= dur {
			break
		}
		at := begin.Add(offset)
		if !sleepUntil(ctx, at) {
			break
		}
		select {
		case starts <- at:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(starts)
	wg.Wait()
	elapsed := time.Since(begin)
	stop()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rec := t.record(elapsed, perWorker)
	rec.maxInFlight = int(peak.Load())
	return rec, nil
}
