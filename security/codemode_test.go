package security

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectAs connects to s as the caller of key.
func connectAs(t *testing.T, s *server, key string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "security-test"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{key}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// rssKiB reads a process's resident memory (field VmRSS or VmHWM, the
// peak) from /proc, in KiB.
func rssKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestCodeModeScripts: code mode through `mcphost run`. A script runs
// under its caller's policies (bob is denied a tool alice may call, inside
// a script as outside); it finds no way out of the sandbox (no fetch,
// require, std, os, process, sockets); and a caller that sends memory
// bombs, more at once than max_running, neither grows mcphost much past
// max_running × memory nor stops another caller's plain calls. (Endless
// loops: TestCodeModeLimits in host/gateway, over HTTP.)
func TestCodeModeScripts(t *testing.T) {
	cfg := writeConfig(t, "", twoKeys("")+`
tools {
  exposure = "code"
  code {
    timeout     = "30s"
    memory      = "32MiB"
    max_running = 2
  }
}
plugin "no-pid-for-bob" {
  source = "builtin:deny"
  config = { tools = ["up__pid"], subjects = "bob" }
}
`)
	s := startServer(t, cfg)
	alice, bob := connectAs(t, s, callerAliceKey), connectAs(t, s, callerBobKey)

	if got, isErr := callText(t, alice, "run_code", map[string]any{"code": `return typeof tools.up__pid({})`}); isErr || got != `"number"` {
		t.Fatalf("alice's script: %v %s", isErr, got)
	}
	got, isErr := callText(t, bob, "run_code", map[string]any{"code": `return [typeof tools.up__pid, callTool("up__pid", {}).content[0].text]`})
	if isErr || !strings.Contains(got, `"undefined","call to up__pid denied: policy \"no-pid-for-bob\"`) {
		t.Fatalf("bob's script: %v %s", isErr, got)
	}
	got, isErr = callText(t, bob, "run_code", map[string]any{"code": `return [typeof fetch, typeof require, typeof std, typeof os, typeof process, typeof XMLHttpRequest, typeof WebSocket, typeof WebAssembly, typeof setTimeout]`})
	if isErr || got != `["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"]` {
		t.Fatalf("globals: %v %s", isErr, got)
	}

	pid := s.cmd.Process.Pid
	before := rssKiB(t, pid, "VmRSS")
	bombs := []string{
		`const a = []; for (;;) a.push(new Array(1e6).fill(1.5))`,
		`const a = []; for (;;) a.push(new ArrayBuffer(8 << 20))`,
		`const a = []; for (;;) a.push(new Float64Array(1 << 20))`,
		`let s = "x"; const a = []; for (let i = 0; ; i++) a.push(s.repeat(1 << 16) + i)`,
		`function f() { return f() + 1 } return f()`,
		`const a = []; for (;;) a.push(new ArrayBuffer(4 << 20))`,
	}
	var wg sync.WaitGroup
	results := make([]string, len(bombs))
	for i, b := range bombs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": b}})
			if err != nil {
				results[i] = "error: " + err.Error()
				return
			}
			results[i] = res.Content[0].(*mcp.TextContent).Text
			if !res.IsError {
				results[i] = "not an error: " + results[i]
			}
		}()
	}
	// Alice's plain calls go on meanwhile (and give the bombs time to
	// run into their limits).
	for range 5 {
		start := time.Now()
		if got, isErr := callText(t, alice, "up__echo", map[string]any{"text": "still here"}); isErr || got != "still here" {
			t.Fatalf("alice during the attack: %v %s", isErr, got)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("alice's call took %s during the attack", d)
		}
	}
	wg.Wait()
	for i, r := range results {
		ok := strings.Contains(r, "out of memory") || strings.Contains(r, "stack overflow")
		if !ok || strings.HasPrefix(r, "error:") || strings.HasPrefix(r, "not an error") {
			t.Errorf("bomb %d (%s) answered: %.300s", i, bombs[i], r)
		}
	}
	peak := rssKiB(t, pid, "VmHWM")
	t.Logf("mcphost resident: %d MiB before the attack, peak %d MiB", before>>10, peak>>10)
	// Each bomb alone would take what the machine has. Bounded, the
	// process holds two runs' memory at a time, the copies a growing wasm
	// memory leaves until the garbage collector takes them back, and as
	// much again under GOGC: measured 120 to 160 MiB here (and 200 to
	// 240 with max_running = 6); the cap of each run's memory itself is
	// TestHostileScripts's (host/codemode).
	if grown := (peak - before) >> 10; grown > 4*2*32+128 {
		t.Errorf("mcphost grew by %d MiB under the attack; max_running × memory is 64 MiB", grown)
	}
	if got, isErr := callText(t, alice, "run_code", map[string]any{"code": `return tools.up__echo({text: "after"})`}); isErr || got != `"after"` {
		t.Fatalf("alice's script after the attack: %v %s", isErr, got)
	}
}
