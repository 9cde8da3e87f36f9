package security

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Item 4 of issue 12: a plugin without loops ran past its timeout and froze
// the process. The guests are hand-written: tool_call computes fib(60) by
// naive recursion, with no loop (../plugins/testdata/recurse). recurse.wasm
// is rewritten by the host; recurse-nolength.wasm lacks the import the
// rewriter needs and runs guarded by wazero instead.

func recurseWasm(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "plugins", "testdata", "recurse", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// recurseConfig serves upstreams a and b, each behind one recursing plugin
// (a: rewritten, b: guarded) with the given timeout.
func recurseConfig(t testing.TB, timeout string) string {
	return writeConfig(t, "", fmt.Sprintf(`
server "a" {
  command = "UPSTREAM"
}
server "b" {
  command = "UPSTREAM"
}
plugin "rec" {
  source  = %q
  servers = ["a"]
  timeout = %q
}
plugin "recnl" {
  source  = %q
  servers = ["b"]
  timeout = %q
}
`, recurseWasm(t, "recurse.wasm"), timeout, recurseWasm(t, "recurse-nolength.wasm"), timeout))
}

// cpuSeconds is the user and system CPU time a process has used.
func cpuSeconds(t testing.TB, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ, 100 on Linux
}

// waitSpinning waits until pid has burnt another second of CPU: the guests
// are running.
func waitSpinning(t testing.TB, pid int) {
	t.Helper()
	base := cpuSeconds(t, pid)
	testproc.WaitFor(t, "the guests to spin", 30*time.Second, func() bool { return cpuSeconds(t, pid) > base+1 })
}

// spinCalls starts a call of a__echo and of b__echo, each on its own
// session, and returns their errors or texts on a channel.
func spinCalls(t *testing.T, s *server) <-chan string {
	t.Helper()
	out := make(chan string, 2)
	for _, tool := range []string{"a__echo", "b__echo"} {
		cs := connect(t, s.URL, nil)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hi"}})
			d := time.Since(start).Round(time.Millisecond)
			switch {
			case err != nil:
				out <- fmt.Sprintf("%s after %v: error %v", tool, d, err)
			case len(res.Content) > 0:
				text, _ := res.Content[0].(*mcp.TextContent)
				if text != nil {
					out <- fmt.Sprintf("%s after %v: isError=%v %s", tool, d, res.IsError, text.Text)
					return
				}
				fallthrough
			default:
				out <- fmt.Sprintf("%s after %v: isError=%v", tool, d, res.IsError)
			}
		}()
	}
	return out
}

// TestRecursingPluginTimesOut: calls behind a recursing plugin get a clear
// error at the plugin's timeout, /healthz answers while two run on a
// 2-core machine, and the plugin keeps serving the next call the same way.
func TestRecursingPluginTimesOut(t *testing.T) {
	const timeout = 500 * time.Millisecond
	s := startServer(t, recurseConfig(t, timeout.String()))
	for round := range 2 {
		start := time.Now()
		results := spinCalls(t, s)
		var got []string
		var healthFails int
		for len(got) < 2 {
			select {
			case r := <-results:
				got = append(got, r)
			case <-time.After(50 * time.Millisecond):
				if len(got) < 2 && !healthy(s.URL) {
					healthFails++
				}
			}
		}
		d := time.Since(start)
		t.Logf("round %d: %q in %v", round, got, d)
		if healthFails > 0 {
			t.Errorf("round %d: /healthz failed %d times while the guests ran", round, healthFails)
		}
		if d > timeout+3*time.Second {
			t.Errorf("round %d: the calls took %v, timeout %v", round, d, timeout)
		}
		for _, r := range got {
			if !strings.Contains(r, "isError=true") || !strings.Contains(r, "timed out") {
				t.Errorf("round %d: %s; want an error result saying the plugin timed out", round, r)
			}
		}
	}
}

// TestSIGTERMWithGuestsSpinning: mcphost run exits within a few seconds of
// SIGTERM while two guests with a ten-minute timeout recurse, and /healthz
// answers meanwhile. The calls in flight get listen.drain_timeout (here 2s)
// to finish; spinning guests cannot hold the process past it.
func TestSIGTERMWithGuestsSpinning(t *testing.T) {
	cfg := recurseConfig(t, "10m")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append([]byte("listen {\n  drain_timeout = \"2s\"\n}\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, cfg)
	results := spinCalls(t, s)
	waitSpinning(t, s.cmd.Process.Pid)
	for range 5 {
		if !healthy(s.URL) {
			t.Errorf("/healthz failed while the guests spin")
		}
	}
	start := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("mcphost still runs 15s after SIGTERM")
	}
	d := time.Since(start)
	t.Logf("exited %v after SIGTERM, status %v", d, s.cmd.ProcessState)
	if d > 7*time.Second {
		t.Errorf("mcphost took %v to exit after SIGTERM", d)
	}
	if !s.cmd.ProcessState.Success() {
		t.Errorf("exit status %v after SIGTERM", s.cmd.ProcessState)
	}
	for range 2 {
		select {
		case r := <-results:
			t.Log(r)
		case <-time.After(5 * time.Second):
			t.Errorf("a client call did not end after mcphost exited")
		}
	}
}

// TestPluginTestCLIStopped: `mcphost plugin test` with a recursing plugin
// is stopped by its --timeout, and with a long timeout by SIGTERM and by
// SIGINT.
func TestPluginTestCLIStopped(t *testing.T) {
	input := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(input, []byte(`{"server":"a","tool":"t","name":"a__t","arguments":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, wasm := range []string{"recurse.wasm", "recurse-nolength.wasm"} {
		t.Run(wasm+"/timeout", func(t *testing.T) {
			start := time.Now()
			_, stderr, code := runCLI(t, "plugin", "test", recurseWasm(t, wasm), "--hook", "tool_call", "--input", input, "--timeout", "300ms")
			d := time.Since(start)
			if code != 1 || !strings.Contains(stderr, "timed out") {
				t.Errorf("exit %d, stderr %q; want 1 and a timeout", code, stderr)
			}
			if d > 5*time.Second {
				t.Errorf("took %v with a 300ms timeout", d)
			}
		})
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(wasm+"/"+sig.String(), func(t *testing.T) {
				cmd := exec.Command(mcphostBin, "plugin", "test", recurseWasm(t, wasm), "--hook", "tool_call", "--input", input, "--timeout", "10m")
				var stderr testproc.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				var once sync.Once
				kill := func() { once.Do(func() { cmd.Process.Kill(); <-done }) }
				t.Cleanup(kill)
				waitSpinning(t, cmd.Process.Pid)
				start := time.Now()
				cmd.Process.Signal(sig)
				select {
				case err := <-done:
					once.Do(func() {})
					d := time.Since(start)
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != 1 {
						t.Errorf("exit %v; want status 1", err)
					}
					if d > 3*time.Second {
						t.Errorf("took %v to exit after %v", d, sig)
					}
					t.Logf("exited %v after %v: %s", d, sig, strings.TrimSpace(stderr.String()))
				case <-time.After(15 * time.Second):
					t.Fatalf("still running 15s after %v; stderr:\n%s", sig, stderr.String())
				}
			})
		}
	}
}
