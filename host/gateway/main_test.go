package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Real upstream servers, built once for the package's tests.
var (
	upstreamBin   string // host/testdata/upstream
	everythingBin string // the go-sdk conformance server
	sseBridgeBin  string // host/testdata/ssebridge: a stdio server over legacy SSE
)

// TestMain builds the real servers the tests run. The tests of this
// package stay serial, but for pure ones (TestPickPath): nearly each starts
// real upstream processes and a Host, and many hold calls, drains,
// timeouts and reconnect backoffs to bounds of a few hundred milliseconds
// that two cores shared by parallel tests would miss; they run under -race
// in CI as well.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcphost-host-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err := testproc.Build(dir, map[string]string{
		"upstream":          "../testdata/upstream",
		"everything-server": "github.com/modelcontextprotocol/go-sdk/conformance/everything-server",
		"ssebridge":         "../testdata/ssebridge",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	upstreamBin, everythingBin, sseBridgeBin = bins["upstream"], bins["everything-server"], bins["ssebridge"]
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func testLogger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: testWriter{t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func stdioServer(name string, args ...string) upstream.ServerConfig {
	return upstream.ServerConfig{Name: name, Transport: upstream.TransportStdio, Command: upstreamBin, Args: append([]string{"-name", name}, args...)}
}

// startHost builds and starts a host and closes it when the test ends.
func startHost(t testing.TB, cfg Config, opts *Options) *Host {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	h, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

// connectHTTP serves h over real loopback HTTP and connects a go-sdk client.
func connectHTTP(t testing.TB, h *Host, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// startProcess runs a server process for the test's duration and waits until
// addr accepts connections.
func startProcess(t *testing.T, addr string, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s: %v", name, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func httptestServer(t *testing.T, h *Host) string {
	t.Helper()
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}
