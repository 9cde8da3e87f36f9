package gateway

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestPerIdentityProcessCap: with sessions = "per_client" each identity
// has one upstream process, whatever the number of its sessions; at
// max_sessions, with every process busy, another identity's call is an
// isError result that names the server, the cap and the setting.
func TestPerIdentityProcessCap(t *testing.T) {
	sc := perClient(stdioServer("a"))
	sc.MaxSessions = 1
	h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{sc}}, nil)
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	connect := func(token string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "cap", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: authClient(token)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice1, alice2 := connect("alice-key-0123456789"), connect("alice-key-0123456789")
	bob := connect("bob-key-0123456789")
	pid1, _ := callText(t, alice1, "a__pid", nil)
	pid2, _ := callText(t, alice2, "a__pid", nil)
	if pid1 != pid2 {
		t.Fatalf("alice's two sessions have two processes (%s, %s)", pid1, pid2)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		callText(t, alice1, "a__sleep", map[string]any{"millis": 1500})
	}()
	testproc.WaitFor(t, "alice's call to be in flight", 5*time.Second, func() bool { return h.Statuses()[0].InFlight == 1 })
	got, isErr := callText(t, bob, "a__pid", nil)
	t.Logf("refusal: %s", got)
	if !isErr || !strings.Contains(got, `server "a" has 1 per-client sessions, all busy (max_sessions)`) {
		t.Errorf("bob's call at the cap = %q (isError %v), want the cap named", got, isErr)
	}
	<-done
	// Alice's process is idle now: bob's call evicts it and gets his own.
	pid3, isErr := callText(t, bob, "a__pid", nil)
	if isErr || pid3 == pid1 {
		t.Errorf("bob after alice's call ended: %q (isError %v), alice's pid %s", pid3, isErr, pid1)
	}
}
