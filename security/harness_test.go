package security

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Binaries built once for the suite.
var (
	mcphostBin  string // cmd/mcphost
	upstreamBin string // host/testdata/upstream: echo, log, sleep, crash, spawn_child, pid...
	clockBin    string // examples/servers/clock
)

// Hostile guests: one package each under testdata/guests, built for wasip1.
var (
	guestPaths map[string]string
	guestErr   error
)

// The attacks do not run in parallel: most serve on a port FreeAddr picked
// and freed, which another test could take before mcphost binds it, and
// many hold mcphost to timeouts and caps that another test's load would
// move.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcphost-security")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err := testproc.Build(dir, map[string]string{
		"mcphost":  "../cmd/mcphost",
		"upstream": "../host/testdata/upstream",
		"clock":    "../examples/servers/clock",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mcphostBin, upstreamBin, clockBin = bins["mcphost"], bins["upstream"], bins["clock"]

	// The filesystem escape guest is shared with the plugins package's
	// tests, which run it against the runtime directly.
	guests := map[string]testproc.WasmGuest{"fsescape": {Pkg: "../plugins/testdata/guests/fsescape"}}
	pkgs, _ := filepath.Glob("testdata/guests/*")
	for _, p := range pkgs {
		guests[filepath.Base(p)] = testproc.WasmGuest{Pkg: "./" + p}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	guestPaths, guestErr = testproc.BuildWasm(filepath.Join(base, "mcphost-test", "security-guests"),
		[]string{"testdata/guests/*/*.go", "../plugins/testdata/guests/fsescape/*.go", "../abi/*.go", "../abi/pdk/*.go", "../go.mod", "../go.sum"}, guests)
	if guestErr != nil && !errors.Is(guestErr, testproc.ErrNoToolchain) {
		fmt.Fprintln(os.Stderr, "building hostile guests:", guestErr)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// guest returns the path of a built hostile guest.
func guest(t testing.TB, name string) string {
	t.Helper()
	testproc.NeedGuests(t, guestErr)
	p, ok := guestPaths[name]
	if !ok {
		t.Fatalf("no guest %q under testdata/guests", name)
	}
	return p
}

// writeConfig writes an HCL config into dir (a fresh temp dir when empty),
// replacing UPSTREAM and CLOCK with the built servers' paths, and returns
// its path.
func writeConfig(t testing.TB, dir, body string) string {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	body = strings.ReplaceAll(body, "UPSTREAM", upstreamBin)
	body = strings.ReplaceAll(body, "CLOCK", clockBin)
	p := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCLI runs one mcphost command to completion (bounded by a minute).
func runCLI(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mcphostBin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("mcphost %v: %v\n%s", args, err, e.String())
	}
	return o.String(), e.String(), code
}

// server is a running `mcphost run`.
type server struct {
	cmd    *exec.Cmd
	URL    string // http://ADDR
	stderr *testproc.Buffer
	done   chan struct{}
}

// startServer runs `mcphost run CONFIG --http ADDR` and waits for /healthz.
// The process is stopped with SIGTERM (then SIGKILL) when the test ends.
func startServer(t testing.TB, config string, extra ...string) *server {
	t.Helper()
	addr := testproc.FreeAddr(t)
	args := append([]string{"run", config, "--http", addr, "--log-level", "debug"}, extra...)
	return launch(t, exec.Command(mcphostBin, args...), addr)
}

// launch starts cmd, an mcphost serving HTTP on addr, and waits for
// /healthz.
func launch(t testing.TB, cmd *exec.Cmd, addr string) *server {
	t.Helper()
	s := &server{cmd: cmd, URL: "http://" + addr, stderr: &testproc.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			t.Logf("mcphost stderr:\n%s", s.stderr.String())
		}
	})
	testproc.WaitFor(t, "mcphost /healthz", 2*time.Minute, func() bool {
		select {
		case <-s.done:
			t.Fatalf("mcphost exited early:\n%s", s.stderr.String())
		default:
		}
		return healthy(s.URL)
	})
	return s
}

// Stop sends SIGTERM and waits up to 20 s before SIGKILL.
func (s *server) Stop(t testing.TB) {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		t.Errorf("mcphost ignored SIGTERM for 20s; killing it")
		s.cmd.Process.Kill()
		<-s.done
	}
}

// stdioServer is a running `mcphost run CONFIG --stdio`, with its pipes.
type stdioServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *testproc.Buffer
	exited chan struct{} // closed once the process has been waited for
}

// startStdio runs `mcphost run CONFIG --stdio --no-watch`. When the test
// ends its stdin is closed and it has 20 s to exit before SIGKILL; its
// stderr is logged if the test failed.
func startStdio(t testing.TB, config string) *stdioServer {
	t.Helper()
	s := &stdioServer{cmd: exec.Command(mcphostBin, "run", config, "--stdio", "--no-watch"), stderr: &testproc.Buffer{}, exited: make(chan struct{})}
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if s.stdout, err = s.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("mcphost stderr:\n%s", s.stderr.String())
		}
	})
	return s
}
