package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/pgtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Binaries built once for the package's tests: mcphost itself and real
// upstream servers.
var (
	mcphostBin  string
	upstreamBin string // host/testdata/upstream: tools to crash, sleep, report its pid
	clockBin    string // examples/servers/clock
)

// Only the tests of pure functions call t.Parallel. The others run the
// binaries on ports FreeAddr picked and freed (another test could take one
// first), set the environment, or time what they run.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcphost-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err := testproc.Build(dir, map[string]string{
		"mcphost":  ".",
		"upstream": "../../host/testdata/upstream",
		"clock":    "../../examples/servers/clock",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mcphostBin, upstreamBin, clockBin = bins["mcphost"], bins["upstream"], bins["clock"]
	code := pgtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeConfig writes an HCL config into a temp dir and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.hcl")
	body = strings.ReplaceAll(body, "UPSTREAM", upstreamBin)
	body = strings.ReplaceAll(body, "CLOCK", clockBin)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const twoServers = `
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
}
server "clock" {
  command = "CLOCK"
}
plugin "titles" {
  source = "builtin:titles"
}
runtime {
  watch = true
}
`

func mcphost(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(mcphostBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestValidate(t *testing.T) {
	good := writeConfig(t, twoServers)
	if out, errs, code := mcphost(t, "validate", good); code != 0 || !strings.Contains(out, "ok (2 servers, 1 plugin)") {
		t.Fatalf("validate good: code %d, out %q, err %q", code, out, errs)
	}
	bad := writeConfig(t, `
server "a" {
  transport = "stdio"
  comand    = "x"
}
server "a" {
  transport = "http"
  url       = "ftp://nope"
  timeout   = "soon"
}
`)
	_, errs, code := mcphost(t, "validate", bad)
	if code != 1 {
		t.Fatalf("validate bad: exit %d, want 1; stderr:\n%s", code, errs)
	}
	// Every mistake at once, each with file:line:col.
	for _, want := range []string{
		"config.hcl:4:3: error", `Did you mean "command"?`,
		"config.hcl:6:8: error", "Duplicate server",
		"config.hcl:8:15: error", "config.hcl:9:15: error",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, errs)
		}
	}
}

func TestToolsAndCall(t *testing.T) {
	cfg := writeConfig(t, twoServers)
	out, errs, code := mcphost(t, "tools", cfg)
	if code != 0 {
		t.Fatalf("tools: exit %d: %s", code, errs)
	}
	for _, want := range []string{"up__echo", "clock__current_time", "Current time"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools output lacks %q:\n%s", want, out)
		}
	}
	out, errs, code = mcphost(t, "call", cfg, "up__echo", `{"text":"hello from the cli"}`)
	if code != 0 || strings.TrimSpace(out) != "hello from the cli" {
		t.Fatalf("call: exit %d, out %q, err %q", code, out, errs)
	}
	// A tool error exits 1 and still prints the result.
	out, _, code = mcphost(t, "call", cfg, "clock__current_time", `{"zone":"Not/AZone"}`)
	if code != 1 || out == "" {
		t.Errorf("failing call: exit %d, out %q; want exit 1 with the error text", code, out)
	}
	_, errs, code = mcphost(t, "call", cfg, "up__missing")
	if code != 1 || !strings.Contains(errs, `unknown tool "up__missing"`) {
		t.Errorf("unknown tool: exit %d, err %q", code, errs)
	}
}

// One name rule (abi.ValidToolName) for config, host and plugins: a name
// of 65 to 128 characters, allowed by max_name_length, passes a listing
// policy too. It was refused by the plugins' check (64), so no client saw
// any tool.
func TestLongNamesPassPolicies(t *testing.T) {
	const server = "a_really_long_server_name_for_the_test_of_names"
	cfg := writeConfig(t, `
server "`+server+`" {
  command = "UPSTREAM"
  args    = ["-secrets"]
}

tools {
  max_name_length = 100
}

plugin "titles" {
  source = "builtin:titles"
}
`)
	out, errs, code := mcphost(t, "tools", cfg)
	if name := server + "__progress_message"; code != 0 || !strings.Contains(out, name+" ") {
		t.Fatalf("tools: exit %d, %s not listed:\n%s%s", code, name, out, errs)
	}
}

// mcphost tools --format writes the catalog as a model API's tools.
func TestToolsFormats(t *testing.T) {
	cfg := writeConfig(t, twoServers)
	for format, want := range map[string]string{
		"openai": `"type": "function"`, "anthropic": `"input_schema"`, "gemini": `"functionDeclarations"`, "mcp": `"inputSchema"`,
	} {
		out, errs, code := mcphost(t, "tools", cfg, "--format", format)
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "up__echo") || !json.Valid([]byte(out)) {
			t.Errorf("--format %s: exit %d, want JSON with %s:\n%s%s", format, code, want, out, errs)
		}
	}
	if _, errs, code := mcphost(t, "tools", cfg, "--format", "cohere"); code == 0 || !strings.Contains(errs, `unknown provider "cohere"`) {
		t.Errorf("--format cohere: exit %d, %s", code, errs)
	}
}

// mcphost call and mcphost tools SERVER... start only the servers they
// need: a broken server elsewhere in the config is never started.
func TestCLIStartsOnlyNeededServers(t *testing.T) {
	cfg := writeConfig(t, twoServers+`
server "broken" {
  command = "UPSTREAM"
  args    = ["-fail", "broken on purpose"]
}
`)
	out, errs, code := mcphost(t, "call", cfg, "up__echo", `{"text":"only up"}`)
	if code != 0 || strings.TrimSpace(out) != "only up" || strings.Contains(errs, "broken") {
		t.Errorf("call: exit %d, out %q, stderr %q; want only up started", code, out, errs)
	}
	out, errs, code = mcphost(t, "tools", cfg, "clock")
	if code != 0 || !strings.Contains(out, "clock__current_time") || strings.Contains(out, "up__") || strings.Contains(errs, "broken") {
		t.Errorf("tools clock: exit %d\n%s%s", code, out, errs)
	}
	_, errs, code = mcphost(t, "tools", cfg, "clocck")
	if code == 0 || !strings.Contains(errs, `no server "clocck" in the config. Did you mean "clock"? Servers: `) {
		t.Errorf("tools clocck: exit %d, %s", code, errs)
	}
	// Without servers named, tools starts every one and says which failed.
	_, errs, _ = mcphost(t, "tools", cfg)
	if !strings.Contains(errs, "server broken: failed") {
		t.Errorf("tools: the broken server is not reported: %s", errs)
	}
}

// mcphost run --stdio speaks MCP on stdout and logs only to stderr.
func TestRunStdio(t *testing.T) {
	cfg := writeConfig(t, twoServers)
	cmd := exec.Command(mcphostBin, "run", "--stdio", cfg, "--log-level", "debug")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) < 8 {
		t.Errorf("got %d tools", len(res.Tools))
	}
	call, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__pid"})
	if err != nil {
		t.Fatal(err)
	}
	upPid, _ := strconv.Atoi(call.Content[0].(*mcp.TextContent).Text)
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("mcphost did not exit cleanly after stdin closed: %v\nstderr:\n%s", cmd.ProcessState, stderr.String())
	}
	if testproc.Alive(upPid) {
		t.Errorf("upstream %d outlived mcphost", upPid)
	}
	if !strings.Contains(stderr.String(), "serving on stdio") {
		t.Errorf("logs did not reach stderr:\n%s", stderr.String())
	}
}

// The HTTP endpoint end to end: a client lists and calls, an upstream is
// killed and comes back, the config is edited and reloaded, and SIGTERM
// ends everything cleanly.
func TestRunHTTP(t *testing.T) {
	cfg := writeConfig(t, twoServers)
	addr := testproc.FreeAddr(t)
	m := startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg, "--http", addr)
	cmd, logs := m.cmd, m.logs

	changed := make(chan struct{}, 10)
	c := mcp.NewClient(&mcp.Implementation{Name: "http-test"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callText := func(name string, args any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	pidText, _ := callText("up__pid", nil)
	pid1, _ := strconv.Atoi(pidText)

	// Kill the upstream from outside: the call after gets an error or, once
	// it is back, an answer from a new process.
	syscall.Kill(pid1, syscall.SIGKILL)
	testproc.WaitFor(t, "the upstream to come back", 15*time.Second, func() bool {
		txt, isErr := callText("up__pid", nil)
		pid, _ := strconv.Atoi(txt)
		return !isErr && pid != pid1 && pid > 0
	})
	if out, _, code := mcphost(t, "status", "http://"+addr); code != 0 || !strings.Contains(out, "connected") || !strings.Contains(out, "titles") || !strings.Contains(out, "loaded") {
		t.Errorf("status: exit %d\n%s", code, out)
	}

	// status --json: camelCase throughout, no zero times, the pid that
	// the README tells operators to kill.
	pidText, _ = callText("up__pid", nil)
	pid2, _ := strconv.Atoi(pidText)
	statusJSON := func() (string, map[string]any) {
		t.Helper()
		out, _, code := mcphost(t, "status", "http://"+addr, "--json")
		var doc map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("status --json: exit %d\n%s", code, out)
		}
		return out, doc
	}
	out, doc := statusJSON()
	if strings.Contains(out, "0001-01-01") || regexp.MustCompile(`"[A-Z][A-Za-z0-9]*":`).MatchString(out) {
		t.Errorf("status --json has zero times or keys not in camelCase:\n%s", out)
	}
	for _, st := range doc["servers"].([]any) {
		if st := st.(map[string]any); st["name"] == "up" && st["pid"] != float64(pid2) {
			t.Errorf("status gives up's pid as %v, want %d", st["pid"], pid2)
		}
	}
	// A reload that fails shows in status until one succeeds.
	if err := os.WriteFile(cfg, []byte("server \"clock\" {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, "the failed reload in status", 15*time.Second, func() bool {
		_, doc := statusJSON()
		r, _ := doc["reload"].(map[string]any)
		return r != nil && r["ok"] == false && strings.Contains(fmt.Sprint(r["error"]), "config.hcl")
	})
	if out, _, _ := mcphost(t, "status", "http://"+addr); !strings.Contains(out, "last reload (config): FAILED") {
		t.Errorf("status does not show the failed reload:\n%s", out)
	} else if !regexp.MustCompile(`config\.hcl:\d+:\d+: `).MatchString(out) || regexp.MustCompile(`config\.hcl:\d+,`).MatchString(out) {
		// The place as validate writes it (file:line:col), not HCL's
		// file:line,col-col.
		t.Errorf("status gives the failed reload's place in another format than validate:\n%s", out)
	}

	// Remove the "up" server from the config: its process ends and its
	// tools go, announced by tools/list_changed.
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll("server \"clock\" {\n  command = \"CLOCK\"\n}\n", "CLOCK", clockBin)), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(15 * time.Second):
		t.Fatalf("no tools/list_changed after the config changed; logs:\n%s", logs.String())
	}
	testproc.WaitFor(t, "the removed server's process to end", 10*time.Second, func() bool { return !testproc.Alive(pid2) })
	// The catalog is rebuilt once the server and what it left behind are
	// gone, a moment after its own process.
	testproc.WaitFor(t, "the removed server's tools to go", 10*time.Second, func() bool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if strings.HasPrefix(tl.Name, "up__") {
				return false
			}
		}
		return true
	})

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
		if m.err != nil {
			t.Errorf("mcphost exited with %v after SIGTERM; logs:\n%s", m.err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("mcphost did not exit after SIGTERM; logs:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("no shutdown log:\n%s", logs.String())
	}
}

func TestVersionAndUsage(t *testing.T) {
	out, _, code := mcphost(t, "version")
	if code != 0 || !strings.Contains(out, "plugin ABI "+abi.Version) {
		t.Errorf("version: %d %q", code, out)
	}
	_, errs, code := mcphost(t, "frobnicate")
	if code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %d %q", code, errs)
	}
}

func TestPluginInspectAndTest(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(in, []byte(`{"caller":{},"tools":[{"name":"a__get_file_contents","server":"a","tool":"get_file_contents"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := mcphost(t, "plugin", "test", "builtin:titles", "--hook", "tools_list", "--input", in)
	if code != 0 || !strings.Contains(out, `"title": "Get File Contents"`) {
		t.Fatalf("plugin test: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = mcphost(t, "plugin", "test", "builtin:deny", "--hook", "tools_list", "--input", in, "--config", `tools=["a__*"]`)
	if code != 0 || strings.Contains(out, "get_file_contents") {
		t.Fatalf("plugin test with --config: exit %d\n%s\n%s", code, out, errs)
	}
	// The built-in module refuses to load without naming a policy, and
	// inspect says so, after what it could read.
	out, errs, code = mcphost(t, "plugin", "inspect", "../../filters/builtin.wasm")
	if code != 1 || !strings.Contains(out, "mcphost_tools_list") || !strings.Contains(errs, `no "mcphost.builtin" configuration key`) {
		t.Fatalf("plugin inspect: exit %d\n%s\n%s", code, out, errs)
	}
	// A file that is no module gets the error alone, not an empty report.
	out, errs, code = mcphost(t, "plugin", "inspect", in)
	if code != 1 || !strings.Contains(errs, "does not load") || out != "" {
		t.Fatalf("plugin inspect of JSON: exit %d\n%s\n%s", code, out, errs)
	}
	// inspect takes builtin:NAME as test does.
	out, errs, code = mcphost(t, "plugin", "inspect", "builtin:titles")
	if code != 0 || !regexp.MustCompile(`(?m)^name: +titles$`).MatchString(out) {
		t.Fatalf("plugin inspect builtin:titles: exit %d\n%s\n%s", code, out, errs)
	}
	// An input the host would never send runs, with a word on what it
	// lacks or has too much of; a whole one gets none.
	for _, tc := range []struct{ input, warn string }{
		{`{"tool":"delete_note"}`, `no "name" (the tool's exposed name`},
		{`{"name":"notes__delete_note","server":"notes","tool":"delete_note","tool_name":"x"}`, `unknown field "tool_name"`},
		{`{"name":"notes__delete_note","server":"notes","tool":"delete_note","caller":{}}`, ""},
	} {
		if err := os.WriteFile(in, []byte(tc.input), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errs, code = mcphost(t, "plugin", "test", "builtin:deny", "--hook", "tool_call", "--input", in, "--config", `tools=["notes__delete_*"]`)
		if code != 0 || !strings.Contains(out, `"action"`) {
			t.Fatalf("plugin test %s: exit %d\n%s\n%s", tc.input, code, out, errs)
		}
		if tc.warn == "" && strings.Contains(errs, "warning") || !strings.Contains(errs, tc.warn) {
			t.Errorf("plugin test %s: stderr %q, want a warning with %q", tc.input, errs, tc.warn)
		}
	}
}

// mcphost plugin check proves a .wasm keeps the ABI and its own cases,
// whatever its language: here the Go example plugin with its golden cases,
// a built-in, and a case that fails.
func TestPluginCheck(t *testing.T) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	example := "../../examples/plugins/go-no-destructive"
	wasm, err := testproc.BuildWasm(filepath.Join(base, "mcphost-test", "cmd-guests"),
		[]string{example + "/*.go", "../../abi/*.go", "../../abi/pdk/*.go", "../../go.mod", "../../go.sum"},
		map[string]testproc.WasmGuest{"nodestructive": {Pkg: example}})
	testproc.NeedGuests(t, err)
	out, errs, code := mcphost(t, "plugin", "check", wasm["nodestructive"], example+"/testdata")
	if code != 0 || !strings.Contains(out, "call_denied_pattern.txtar") || !strings.Contains(out, "checks passed") {
		t.Fatalf("plugin check of the example: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = mcphost(t, "plugin", "check", "builtin:redact")
	if code != 0 || !strings.Contains(out, "ok   message: a resource") || !strings.Contains(out, "ok   hints: messageKeywords") {
		t.Fatalf("plugin check of builtin:redact: exit %d\n%s%s", code, out, errs)
	}
	wrong := filepath.Join(t.TempDir(), "wrong.txtar")
	if err := os.WriteFile(wrong, []byte("hook: tool_call\n-- input.json --\n{\"name\":\"fs__read\",\"server\":\"fs\",\"tool\":\"read\",\"annotations\":{\"readOnlyHint\":true}}\n-- output.json --\n{\"action\":\"deny\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = mcphost(t, "plugin", "check", wasm["nodestructive"], wrong)
	if code != 1 || !strings.Contains(out, "FAIL "+wrong) || !strings.Contains(out, "1 of ") {
		t.Fatalf("plugin check with a failing case: exit %d\n%s", code, out)
	}
}

// TestRunAddressTaken: a listen address that is taken (or malformed)
// fails `mcphost run` at once, naming the address and where to change it,
// before any server process starts.
func TestRunAddressTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	marker := filepath.Join(t.TempDir(), "started")
	cfg := writeConfig(t, fmt.Sprintf(`
server "up" {
  command = "/bin/sh"
  args    = ["-c", "touch %s; exec UPSTREAM -name up"]
}
`, marker))
	for _, addr := range []string{taken.Addr().String(), "127.0.0.1:notaport"} {
		start := time.Now()
		_, stderr, code := mcphost(t, "run", cfg, "--http", addr)
		if code == 0 || !strings.Contains(stderr, addr) || !strings.Contains(stderr, "--http") {
			t.Errorf("run --http %s: exit %d, stderr:\n%s\nwant a failure naming the address and --http", addr, code, stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("run --http %s started the server before finding the address unusable", addr)
		}
		t.Logf("%s: failed in %v: %s", addr, time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr))
	}
}

// TestRunRefusesWhileStarting: until the servers have started, the HTTP
// address refuses connections (a load balancer moves on), rather than
// accepting them and leaving them unanswered through the start.
func TestRunRefusesWhileStarting(t *testing.T) {
	addr := testproc.FreeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`
listen {
  http = %q
}
server "slow" {
  command = "/bin/sh"
  args    = ["-c", "sleep 2; exec UPSTREAM -name slow"]
}
`, addr))
	cmd := exec.Command(mcphostBin, "run", cfg)
	logs := &testproc.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	time.Sleep(500 * time.Millisecond) // started, and within the server's 2 s sleep
	start := time.Now()
	c := &http.Client{Timeout: time.Second}
	_, err := c.Get("http://" + addr + "/healthz")
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("/healthz during the start: %v after %v, want connection refused at once", err, time.Since(start).Round(time.Millisecond))
	}
	testproc.WaitFor(t, "mcphost to serve", 15*time.Second, func() bool {
		resp, err := c.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
}
