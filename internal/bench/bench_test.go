package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/bench"
)

// everything is the go-sdk's conformance server, built once by TestMain.
var everything string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	everything = filepath.Join(dir, "everything-server")
	out, err := exec.Command("go", "build", "-o", everything, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building everything-server: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startEverything runs the everything-server on streamable HTTP (stateful)
// for the test and returns its /mcp URL and process.
// Tests that call it stay serial: the port FreePort gives is free only
// until another test listens.
func startEverything(t *testing.T) (string, *bench.Process) {
	t.Helper()
	addr, err := bench.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := bench.StartProcess(everything, []string{"-http=" + addr, "-stateless=false"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(2 * time.Second) })
	url := "http://" + addr + "/mcp"
	if _, err := p.WaitHTTP(context.Background(), 30*time.Second, url); err != nil {
		t.Fatal(err)
	}
	return url, p
}

func connect(t *testing.T, target bench.Target) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := target.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func checkResult(t *testing.T, res *bench.Result, calls, conc int) {
	t.Helper()
	if res.Calls != calls || res.Failures != 0 || res.Concurrency != conc {
		t.Errorf("calls %d failures %d concurrency %d (first error %q), want %d, 0, %d", res.Calls, res.Failures, res.Concurrency, res.FirstError, calls, conc)
	}
	if !(0 < res.Min && res.Min <= res.P50 && res.P50 <= res.P90 && res.P90 <= res.P99 && res.P99 <= res.Max) {
		t.Errorf("latencies out of order: %+v", res.Stats)
	}
	if res.CallsPerSec <= 0 || res.Elapsed <= 0 {
		t.Errorf("calls/s %v in %v", res.CallsPerSec, res.Elapsed)
	}
}

func TestRunStreamable(t *testing.T) {
	url, _ := startEverything(t)
	cs := connect(t, bench.Target{Transport: bench.TransportStreamable, URL: url})
	for _, conc := range []int{1, 4} {
		t.Run(fmt.Sprint("c=", conc), func(t *testing.T) {
			res, err := bench.Run(context.Background(), cs, bench.Options{Tool: "test_simple_text", Calls: 60, Concurrency: conc, Warmup: 5})
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, res, 60, conc)
			if res.Warmup != 5 {
				t.Errorf("warmup %d, want 5", res.Warmup)
			}
		})
	}
}

func TestRunRate(t *testing.T) {
	url, _ := startEverything(t)
	cs := connect(t, bench.Target{Transport: bench.TransportStreamable, URL: url})
	res, err := bench.Run(context.Background(), cs, bench.Options{Tool: "test_simple_text", Rate: 2000, Calls: 40, Warmup: 5})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 40, bench.DefaultRateWorkers)
	if res.Rate != 2000 || res.MaxInFlight < 1 || res.MaxInFlight > bench.DefaultRateWorkers {
		t.Errorf("rate %v max in flight %d", res.Rate, res.MaxInFlight)
	}
}

func TestRunWithArgs(t *testing.T) {
	url, _ := startEverything(t)
	cs := connect(t, bench.Target{Transport: bench.TransportStreamable, URL: url, ProtocolVersion: "2025-11-25"})
	res, err := bench.Run(context.Background(), cs, bench.Options{Tool: "test_tool_with_logging", Args: json.RawMessage(`{}`), Calls: 5, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 5, 1)
}

func TestRunStdio(t *testing.T) {
	t.Parallel()
	target, err := bench.ParseTarget("", []string{everything}, "")
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, target)
	res, err := bench.Run(context.Background(), cs, bench.Options{Tool: "test_simple_text", Calls: 40, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 40, 2)
	if res.Warmup != bench.DefaultWarmup {
		t.Errorf("warmup %d, want the default %d", res.Warmup, bench.DefaultWarmup)
	}
}

// TestRunSSE measures a go-sdk server behind the SSE handler, the
// transport the everything-server does not serve.
func TestRunSSE(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sse", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close) // after the session's clean-up, which ends the event stream
	target, err := bench.ParseTarget(ts.URL+"/sse", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if target.Transport != bench.TransportSSE {
		t.Fatalf("transport %q, want sse", target.Transport)
	}
	cs := connect(t, target)
	res, err := bench.Run(context.Background(), cs, bench.Options{Tool: "ping", Calls: 30, Concurrency: 3, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 30, 3)
}

func TestRunDuration(t *testing.T) {
	url, _ := startEverything(t)
	cs := connect(t, bench.Target{URL: url})
	var progress []bench.Progress
	start := time.Now()
	res, err := bench.Run(context.Background(), cs, bench.Options{
		Tool: "test_simple_text", Duration: 300 * time.Millisecond, Concurrency: 2, Warmup: 2,
		ProgressEvery: 50 * time.Millisecond,
		Progress:      func(p bench.Progress) { progress = append(progress, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a 300ms run took %v", took)
	}
	if res.Calls == 0 || res.Failures != 0 {
		t.Fatalf("calls %d failures %d", res.Calls, res.Failures)
	}
	if res.Elapsed < 300*time.Millisecond {
		t.Errorf("elapsed %v, want at least the duration", res.Elapsed)
	}
	if len(progress) == 0 {
		t.Fatal("no progress reported")
	}
	last := progress[len(progress)-1]
	if last.Duration != 300*time.Millisecond || last.Done > res.Calls || last.Total != 0 {
		t.Errorf("last progress %+v with %d calls made", last, res.Calls)
	}
}

func TestRunFailsFast(t *testing.T) {
	url, _ := startEverything(t)
	cs := connect(t, bench.Target{URL: url})
	_, err := bench.Run(context.Background(), cs, bench.Options{Tool: "no_such_tool", Calls: 10})
	if err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Errorf("unknown tool: err = %v", err)
	}
	// test_error_handling answers with IsError set: a tool error.
	_, err = bench.Run(context.Background(), cs, bench.Options{Tool: "test_error_handling", Calls: 10})
	var te *bench.ToolError
	if !errors.As(err, &te) {
		t.Errorf("tool error: err = %v, want a *bench.ToolError", err)
	}
	if _, err := bench.Run(context.Background(), cs, bench.Options{Calls: 10}); err == nil {
		t.Error("no tool: no error")
	}
}

func TestRunCanceled(t *testing.T) {
	url, _ := startEverything(t)
	cs := connect(t, bench.Target{URL: url})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := bench.Run(ctx, cs, bench.Options{Tool: "test_simple_text", Duration: time.Hour, Concurrency: 2})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's", err)
	}
}

func TestProcessRSS(t *testing.T) {
	_, p := startEverything(t)
	rss, err := bench.RSS(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	peak, err := bench.PeakRSS(p.PID())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 || rss > 1<<30 || peak < rss {
		t.Errorf("rss %d peak %d", rss, peak)
	}
	if err := p.Stop(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Error("still running after Stop")
	}
	if _, err := bench.RSS(p.PID()); err == nil {
		t.Error("RSS of an ended process: no error")
	}
}

func TestProcessWaitLine(t *testing.T) {
	t.Parallel()
	p, err := bench.StartProcess("sh", []string{"-c", "sleep 0.1; echo starting; echo >&2 ready now; sleep 30"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	at, err := p.WaitLine(context.Background(), 10*time.Second, func(s string) bool { return strings.HasPrefix(s, "ready") })
	if err != nil {
		t.Fatal(err)
	}
	if at.Before(p.Started) {
		t.Errorf("line read at %v, before the start at %v", at, p.Started)
	}
	if got := p.Tail(5); got != "starting\nready now" {
		t.Errorf("tail %q", got)
	}

	q, err := bench.StartProcess("sh", []string{"-c", "echo bye; exit 3"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Stop(time.Second)
	if _, err := q.WaitLine(context.Background(), 10*time.Second, func(string) bool { return false }); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("exited process: err = %v", err)
	}
}

// Watch catches a line written after it was called and before Wait was:
// the process writes only once the test creates a file, after both watches.
func TestProcessWatch(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	p, err := bench.StartProcess("sh", []string{"-c", `while [ ! -e "$1" ]; do sleep 0.01; done; echo one; echo two; sleep 30`, "sh", gate}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	two := p.Watch(func(s string) bool { return s == "two" })
	one := p.Watch(func(s string) bool { return s == "one" })
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l2, err := two.Wait(context.Background(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l1, err := one.Wait(context.Background(), 10*time.Second) // written before this Wait
	if err != nil {
		t.Fatal(err)
	}
	if l1.Text != "one" || l2.Text != "two" || l2.At.Before(l1.At) {
		t.Errorf("lines %+v then %+v", l1, l2)
	}
	if _, err := p.Watch(func(string) bool { return false }).Wait(context.Background(), 10*time.Millisecond); err == nil || !strings.Contains(err.Error(), "within") {
		t.Errorf("no such line: err = %v", err)
	}
}

func TestCPUTime(t *testing.T) {
	t.Parallel()
	// A shell that burns CPU in a child in a process group of its own.
	p, err := bench.StartProcess("sh", []string{"-c", "setsid sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 30' & sleep 30"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		group, err := bench.TreeCPUTime(p.PID())
		if err != nil {
			t.Fatal(err)
		}
		own, err := bench.CPUTime(p.PID())
		if err != nil {
			t.Fatal(err)
		}
		if group >= 50*time.Millisecond && own < group {
			return // the child's time counts for the tree, not the parent
		}
		if time.Now().After(deadline) {
			t.Fatalf("group CPU %v, leader %v", group, own)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRawSession(t *testing.T) {
	url, _ := startEverything(t)
	ctx := context.Background()
	raw, err := bench.DialRaw(ctx, url, "2025-11-25", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	pages, err := raw.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := bench.CountTools(pages)
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, bench.Target{URL: url})
	want := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		want++
	}
	if n != want || n == 0 {
		t.Errorf("raw listing has %d tools, the go-sdk client's %d", n, want)
	}
	res, err := raw.Call(ctx, "tools/call", map[string]any{"name": "test_simple_text"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"result"`) {
		t.Errorf("tools/call answered %s", res)
	}
	if _, err := raw.Call(ctx, "tools/call", map[string]any{"name": "no_such_tool"}); err == nil || !strings.Contains(err.Error(), "JSON-RPC error") {
		t.Errorf("unknown tool: err = %v", err)
	}
}
