package host

import (
	"context"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
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
		{"streamable HTTP, a call fails", TransportStreamableHTTP, false, true},
		{"streamable HTTP, idle", TransportStreamableHTTP, false, false},
		{"SSE, idle", TransportSSE, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := testproc.FreeAddr(t)
			args := []string{"-http=" + addr, "-name", "web"}
			url := "http://" + addr
			if tt.sse {
				args = append(args, "-sse")
			}
			up := startProcess(t, addr, upstreamBin, args...)
			h := startHost(t, Config{Servers: []ServerConfig{{Name: "web", Transport: tt.transport, URL: url}}}, nil)
			if st := h.Statuses()[0]; st.State != StateConnected {
				t.Fatalf("before: %+v", st)
			}
			up.Process.Kill()
			up.Wait()
			if tt.call {
				res, err := h.CallTool(context.Background(), abi.Caller{}, "web__echo", []byte(`{"text":"x"}`))
				if err != nil || !res.IsError {
					t.Fatalf("a call to the dead upstream: %+v, %v", res, err)
				}
				if st := h.Statuses()[0]; st.State == StateConnected {
					t.Fatalf("after a failed call the upstream is still %q", st.State)
				}
				return
			}
			testproc.WaitFor(t, "the upstream reported down", 20*time.Second, func() bool {
				return h.Statuses()[0].State != StateConnected
			})
			st := h.Statuses()[0]
			t.Logf("reported %s (%s) %v after the kill", st.State, st.Error, time.Since(st.Since))
		})
	}
}
