package engine_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/internal/bench"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// The cost of a tool plugin: a no-op tool served as a Wasm plugin through
// mcphost, against the same no-op tool in a minimal native go-sdk server,
// each called end to end over streamable HTTP on loopback by a go-sdk
// client. docs/BENCHMARKS.md records a run of TestToolPluginVersusNative.

// nativeNoop serves a go-sdk server with one no-op tool over HTTP.
func nativeNoop(tb testing.TB) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "native", Version: "1"}, nil)
	type empty struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "noop", Description: "Does nothing."}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, empty, error) {
		return nil, empty{}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	tb.Cleanup(ts.Close)
	return ts.URL
}

// pluginNoop serves the typed test guest's no-op tool through mcphost.
func pluginNoop(tb testing.TB) string {
	dir := tb.TempDir()
	path := dir + "/mcphost.hcl"
	text := toolBlock("kit", toolGuest(tb, "typed"), "  instances = 4")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	file, diags := config.Load(path)
	if diags.HasErrors() {
		tb.Fatal(diags.Err())
	}
	e, err := engine.Start(context.Background(), file, &engine.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(e.Host().Handler())
	tb.Cleanup(func() { ts.Close(); e.Close() })
	return ts.URL
}

func connectBench(tb testing.TB, url string) *mcp.ClientSession {
	t, err := bench.ParseTarget(url+"/mcp", nil, "")
	if err != nil {
		tb.Fatal(err)
	}
	cs, err := t.Connect(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

func BenchmarkToolCall(b *testing.B) {
	for _, c := range []struct {
		name, tool string
		url        func(testing.TB) string
	}{{"native", "noop", nativeNoop}, {"plugin", "kit__noop", pluginNoop}} {
		b.Run(c.name, func(b *testing.B) {
			cs := connectBench(b, c.url(b))
			ctx := context.Background()
			params := &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}}
			for range 100 {
				if _, err := cs.CallTool(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// TestToolPluginVersusNative measures both as they run: the mcphost
// binary (`mcphost run`) serving the typed test guest's no-op tool, and a
// minimal native go-sdk server binary (testdata/noopserver), each in its
// own process, called by a go-sdk client from this one, in alternating
// rounds. It prints the table docs/BENCHMARKS.md records. It runs only
// with MCPHOST_BENCH_TOOLS=1 (MCPHOST_BENCH_ROUNDS, _CALLS to change the
// size), and fails when the plugin's median p50 is above 1.5 times the
// native server's. Not parallel, unlike the other tests: it measures.
func TestToolPluginVersusNative(t *testing.T) {
	if os.Getenv("MCPHOST_BENCH_TOOLS") == "" {
		t.Skip("set MCPHOST_BENCH_TOOLS=1 to measure")
	}
	rounds, calls := envInt("MCPHOST_BENCH_ROUNDS", 5), envInt("MCPHOST_BENCH_CALLS", 3000)
	dir := t.TempDir()
	bins, err := testproc.Build(dir, map[string]string{"mcphost": "../../cmd/mcphost", "noopserver": "./testdata/noopserver"})
	if err != nil {
		t.Fatal(err)
	}
	start := func(name string, args ...string) string {
		addr := testproc.FreeAddr(t)
		var cmd *exec.Cmd
		if name == "mcphost" {
			cfg := filepath.Join(dir, "mcphost.hcl")
			text := fmt.Sprintf("listen {\n  http = %q\n}\n", addr) + toolBlock("kit", toolGuest(t, "typed"), "  instances = 4") +
				fmt.Sprintf("runtime {\n  cache_dir = %q\n}\n", filepath.Join(dir, "cache"))
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd = exec.Command(bins["mcphost"], "run", cfg, "--log-level", "warn")
		} else {
			cmd = exec.Command(bins[name], "-http", addr)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		testproc.WaitFor(t, name+" listening", 30*time.Second, func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		return "http://" + addr
	}
	native := connectBench(t, start("noopserver"))
	plugin := connectBench(t, start("mcphost"))
	var p50, p99 [2][]time.Duration
	var rate [2][]float64
	ctx := context.Background()
	for round := range rounds {
		for i, s := range []struct {
			cs   *mcp.ClientSession
			tool string
		}{{native, "noop"}, {plugin, "kit__noop"}} {
			res, err := bench.Run(ctx, s.cs, bench.Options{Tool: s.tool, Args: []byte(`{}`), Calls: calls, Concurrency: 1, Warmup: 200})
			if err != nil || res.Failures > 0 {
				t.Fatalf("round %d %s: %v %+v", round, s.tool, err, res)
			}
			p50[i] = append(p50[i], res.P50)
			p99[i] = append(p99[i], res.P99)
			rate[i] = append(rate[i], res.CallsPerSec)
		}
	}
	n50, g50 := bench.Median(p50[0]), bench.Median(p50[1])
	ratio := float64(g50) / float64(n50)
	var b strings.Builder
	fmt.Fprintf(&b, "%d rounds of %d calls each, concurrency 1, alternating; medians of the rounds (%s, %d CPUs)\n\n", rounds, calls, runtime.Version(), runtime.NumCPU())
	fmt.Fprintf(&b, "| server | p50 | p99 | calls/s | p50 ratio |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| native go-sdk server (testdata/noopserver), tool `noop` | %s | %s | %.0f | 1.00x |\n", us(n50), us(bench.Median(p99[0])), bench.Median(rate[0]))
	fmt.Fprintf(&b, "| `mcphost run`, tools_plugin `kit` (Go guest), tool `kit__noop` | %s | %s | %.0f | %.2fx |\n", us(g50), us(bench.Median(p99[1])), bench.Median(rate[1]), ratio)
	fmt.Fprintf(&b, "\nper round, p50 native / plugin:")
	for i := range p50[0] {
		fmt.Fprintf(&b, " %s / %s;", us(p50[0][i]), us(p50[1][i]))
	}
	t.Log("\n" + b.String())
	if ratio > 1.5 {
		t.Errorf("the plugin tool's p50 is %.2fx the native server's, above the 1.5x target", ratio)
	}
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/1e3) }

func envInt(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err != nil || n <= 0 {
		return def
	}
	return n
}
