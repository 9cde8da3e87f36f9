package security

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestAdminListenerCannotStarveMCP: the attack of the hardening review.
// Unauthenticated connections left idle on the admin listener used every
// file descriptor, and the MCP listener then failed with EMFILE. With the
// process held to 256 descriptors, 400 idle connections to the admin
// listener leave the MCP listener serving (a session and a call), and the
// admin listener itself still answers; a foreign Host header (DNS
// rebinding) is refused there as on the MCP listener.
func TestAdminListenerCannotStarveMCP(t *testing.T) {
	adminAddr := testproc.FreeAddr(t)
	cfg := writeConfig(t, "", `
listen {
  auth_token = "tok"
}
admin {
  http = "`+adminAddr+`"
}
server "up" {
  command = "UPSTREAM"
}
`)
	s := startServerNoFile(t, cfg, 256)
	testproc.WaitFor(t, "the admin listener", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + adminAddr + "/openapi.json")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	for range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", adminAddr, 5*time.Second)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &authTransport{token: "tok"}}
	c := mcp.NewClient(&mcp.Implementation{Name: "after", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("the MCP listener after 400 idle admin connections: %v\n%s", err, s.stderr.String())
	}
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "served"}}); err != nil || res.IsError {
		t.Fatalf("a call after 400 idle admin connections: %v %+v", err, res)
	}
	if strings.Contains(s.stderr.String(), "too many open files") {
		t.Errorf("mcphost ran out of descriptors:\n%s", s.stderr.String())
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + adminAddr + "/openapi.json")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the admin listener after 400 idle connections: %v %v", resp, err)
	}
	resp.Body.Close()

	req, _ := http.NewRequest("GET", "http://"+adminAddr+"/v1/servers", nil)
	req.Host = "rebind.example.com:7701"
	req.Header.Set("Authorization", "Bearer tok")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "Host") {
		t.Errorf("a foreign Host on the admin listener: %d %s, want 403", resp.StatusCode, body)
	}
}
