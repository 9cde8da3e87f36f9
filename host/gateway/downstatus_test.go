package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestDownUpstreamReported: an HTTP or SSE upstream that goes away is
// reported as such within seconds, by a call that fails or, with no call,
// by the keepalive ping; before, a streamable HTTP upstream showed
// "connected" until it came back.
func TestDownUpstreamReported(t *testing.T) {
	for _, tt := range []struct {
		name      string
		transport string
		sse       bool
		call      bool
	}{
		{"streamable HTTP, a call fails", upstream.TransportStreamableHTTP, false, true},
		{"streamable HTTP, idle", upstream.TransportStreamableHTTP, false, false},
		{"SSE, idle", upstream.TransportSSE, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := testproc.FreeAddr(t)
			args := []string{"-http=" + addr, "-name", "web"}
			url := "http://" + addr
			if tt.sse {
				args = append(args, "-sse")
			}
			up := startProcess(t, addr, upstreamBin, args...)
			h := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "web", Transport: tt.transport, URL: url}}}, nil)
			if st := h.Statuses()[0]; st.State != upstream.StateConnected {
				t.Fatalf("before: %+v", st)
			}
			up.Process.Kill()
			up.Wait()
			if tt.call {
				res, err := h.CallTool(context.Background(), abi.Caller{}, "web__echo", []byte(`{"text":"x"}`))
				if err != nil || !res.IsError {
					t.Fatalf("a call to the dead upstream: %+v, %v", res, err)
				}
				if st := h.Statuses()[0]; st.State == upstream.StateConnected {
					t.Fatalf("after a failed call the upstream is still %q", st.State)
				}
				return
			}
			testproc.WaitFor(t, "the upstream reported down", 20*time.Second, func() bool {
				return h.Statuses()[0].State != upstream.StateConnected
			})
			st := h.Statuses()[0]
			t.Logf("reported %s (%s) %v after the kill", st.State, st.Error, time.Since(st.Since))
		})
	}
}

// TestBusyUpstreamKeepsItsSession: an HTTP error status (503, 429) is
// transient to the go-sdk, and must not cost the shared session (it did,
// when every request the transport rejected counted as a lost connection).
func TestBusyUpstreamKeepsItsSession(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "busy", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var busy atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if busy.Load() {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close) // after the host's (cleanups run last first)
	h := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "b", Transport: upstream.TransportStreamableHTTP, URL: up.URL}}}, nil)
	busy.Store(true)
	res, err := h.CallTool(context.Background(), abi.Caller{}, "b__echo", nil)
	if err != nil || !res.IsError {
		t.Fatalf("a call answered 503: %+v, %v; want an error result", res, err)
	}
	busy.Store(false)
	if st := h.Statuses()[0]; st.State != upstream.StateConnected || st.Reconnects != 0 {
		t.Fatalf("after one 503 the upstream is %+v", st)
	}
	if res, err := h.CallTool(context.Background(), abi.Caller{}, "b__echo", nil); err != nil || res.IsError {
		t.Fatalf("the next call: %+v, %v", res, err)
	}
}

// TestStatusStderr: a connected stdio server's stderr tail is in its
// status, masked, for operators; it is not an error.
func TestStatusStderr(t *testing.T) {
	srv := stdioServer("a")
	srv.Env = map[string]string{"UPSTREAM_STDERR": "listening; token=ghp_0123456789abcdefABCDEF0123456789abcd"}
	h := startHost(t, Config{Servers: []upstream.ServerConfig{srv}}, nil)
	var st upstream.Status
	testproc.WaitFor(t, "the stderr tail in the status", 10*time.Second, func() bool {
		st = h.Statuses()[0]
		return st.Stderr != ""
	})
	if st.State != upstream.StateConnected || st.Error != "" || !strings.Contains(st.Stderr, "listening") || strings.Contains(st.Stderr, "ghp_0123") {
		t.Fatalf("status %s, error %q, stderr %q", st.State, st.Error, st.Stderr)
	}
}
