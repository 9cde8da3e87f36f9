package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
	"github.com/mcphost-project/mcphost/internal/tooltest"
)

// TestDrainOnSIGTERM: after SIGTERM a `mcphost run` process fails
// /healthz with 503 "draining" and refuses new sessions, lets the call in
// flight finish and answer, and exits 0.
func TestDrainOnSIGTERM(t *testing.T) {
	m, addr := startDraining(t, "15s", "")
	cmd, logs := m.cmd, m.logs
	healthz := func() (int, string) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func() (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "drain-test"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}
	cs, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// A call of 2 s, in flight when the signal comes.
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	call := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__sleep", Arguments: map[string]any{"millis": 2000, "steps": 4}})
		call <- result{res, err}
	}()
	testproc.WaitFor(t, "the call to reach the upstream", 10*time.Second, func() bool { return inFlightCalls(addr) == 1 })
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, "/healthz to answer 503 draining", 2*time.Second, func() bool {
		c, body := healthz()
		return c == http.StatusServiceUnavailable && body == "draining"
	})
	if s, err := connect(); err == nil {
		s.Close()
		t.Fatal("a new session was accepted while draining")
	} else if !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("a new session while draining: %v, want 503 Service Unavailable", err)
	}
	// The session open before the signal is still served.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("listing on the open session while draining: %v", err)
	}
	select {
	case r := <-call:
		if r.err != nil || r.res.IsError {
			t.Fatalf("the call in flight at SIGTERM: %v %+v", r.err, r.res)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call in flight never answered")
	}
	select {
	case <-m.exited:
		if m.err != nil {
			t.Fatalf("exit: %v\n%s", m.err, logs)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("mcphost did not exit after the drain\n%s", logs)
	}
	if !strings.Contains(logs.String(), "drained") {
		t.Errorf("no drain in the log:\n%s", logs)
	}
	t.Logf("exited %v after SIGTERM", time.Since(signalled).Round(time.Millisecond))
}

// TestDrainWaitsForLegacySSECalls: a legacy SSE client's POST is answered
// 202 at once and its call answered later on its stream; a call of such a
// client in flight at SIGTERM still finishes and answers before the
// process stops.
func TestDrainWaitsForLegacySSECalls(t *testing.T) {
	m, addr := startDraining(t, "15s", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sse-drain-test"}, nil).Connect(ctx,
		&mcp.SSEClientTransport{Endpoint: "http://" + addr + "/sse"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	call := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__sleep", Arguments: map[string]any{"millis": 1500}})
		call <- result{res, err}
	}()
	testproc.WaitFor(t, "the call to reach the upstream", 10*time.Second, func() bool { return inFlightCalls(addr) == 1 })
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-call:
		if r.err != nil || r.res.IsError {
			t.Fatalf("the legacy SSE call in flight at SIGTERM: %v %+v\n%s", r.err, r.res, m.logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the legacy SSE call in flight at SIGTERM never answered\n%s", m.logs)
	}
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("mcphost did not exit after the drain\n%s", m.logs)
	}
}

// TestDrainIsBounded: a call longer than listen.drain_timeout does not
// hold the process: it stops soon after the timeout, and says so. The
// calls still in flight are not cut with their connection: they are
// cancelled upstream and answered with an error that says why, on the
// call shortcut (a plain call) and on the go-sdk's path (a call with a
// progress token) alike.
func TestDrainIsBounded(t *testing.T) {
	m, addr := startDraining(t, "1s", "60s")
	cmd, logs, exited := m.cmd, m.logs, m.exited
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "drain-test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type answer struct {
		how string
		res *mcp.CallToolResult
		err error
	}
	answers := make(chan answer, 2)
	for _, how := range []string{"plain", "with a progress token"} {
		p := &mcp.CallToolParams{Name: "up__sleep", Arguments: map[string]any{"millis": 20000}}
		if how != "plain" {
			p.Meta = mcp.Meta{"progressToken": "p1"}
		}
		go func() {
			res, err := cs.CallTool(ctx, p)
			answers <- answer{how, res, err}
		}()
	}
	testproc.WaitFor(t, "the calls to reach the upstream", 10*time.Second, func() bool { return inFlightCalls(addr) == 2 })
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case a := <-answers:
			if a.err != nil {
				t.Errorf("the %s call in flight at the drain timeout: %v, want an error result", a.how, a.err)
				continue
			}
			text := tooltest.Text(a.res)
			if !a.res.IsError || !strings.Contains(text, "shutting down") || !strings.Contains(text, "drain_timeout") {
				t.Errorf("the %s call in flight at the drain timeout answered %q (isError %v), want an error that says mcphost is shutting down", a.how, text, a.res.IsError)
			}
			t.Logf("%s call answered after %v: %s", a.how, time.Since(signalled).Round(time.Millisecond), text)
		case <-time.After(15 * time.Second):
			t.Fatalf("a call in flight at the drain timeout was never answered\n%s", logs)
		}
	}
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("mcphost still runs 15 s after SIGTERM with drain_timeout 1s\n%s", logs)
	}
	took := time.Since(signalled)
	// 1 s of drain, up to 1 s for the answers and 1 s for the listener,
	// 2 s for plugin calls, and the upstream's stop.
	if took > 10*time.Second {
		t.Errorf("stopped %v after SIGTERM, with drain_timeout 1s", took)
	}
	if !strings.Contains(logs.String(), "still in flight when the drain timeout ended") {
		t.Errorf("no word of the calls cancelled:\n%s", logs)
	}
	if strings.Contains(logs.String(), "still unanswered") {
		t.Errorf("the cancelled calls were not all answered within the grace:\n%s", logs)
	}
	t.Logf("stopped %v after SIGTERM", took.Round(time.Millisecond))
}

// inFlightCalls is the number of calls in flight on the upstream "up" of
// the mcphost at addr, from /status (-1 when unknown).
func inFlightCalls(addr string) int {
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var st struct {
		Servers []struct {
			Name     string `json:"name"`
			InFlight int    `json:"inFlight"`
		} `json:"servers"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return -1
	}
	for _, s := range st.Servers {
		if s.Name == "up" {
			return s.InFlight
		}
	}
	return -1
}

// startDraining runs `mcphost run` with listen.drain_timeout drain and one
// stdio server "up" (call timeout timeout, when not ""), and returns it
// with its HTTP address.
func startDraining(t *testing.T, drain, timeout string) (*runningMcphost, string) {
	t.Helper()
	addr := testproc.FreeAddr(t)
	server := ""
	if timeout != "" {
		server = fmt.Sprintf("  timeout = %q\n", timeout)
	}
	cfg := writeConfig(t, fmt.Sprintf(`
listen {
  http          = %q
  drain_timeout = %q
}
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
%s}
`, addr, drain, server))
	return startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg), addr
}
