package security

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	callerAliceKey = "alice-key-0123456789abcdef"
	callerBobKey   = "bob-key-0123456789abcdefgh"
)

// openStream opens a legacy SSE event stream as key's caller on a
// connection of its own, kept open as an attacker keeps it, and returns
// the answer's status and, for a refusal, its body.
func openStream(t *testing.T, base, key string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer %s\r\n\r\n", key)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("stream of %s: %v", key, err)
	}
	c.SetReadDeadline(time.Time{})
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// twoKeys is a listen block of alice's and bob's keys, with limits.
func twoKeys(limits string) string {
	return `
listen {
` + limits + `
  auth {
    key "alice" {
      value   = "` + callerAliceKey + `"
      subject = "alice"
    }
    key "bob" {
      value   = "` + callerBobKey + `"
      subject = "bob"
    }
  }
}
server "up" {
  command = "UPSTREAM"
}
`
}

// TestOneCallerCannotTakeEveryConnection: the attack of the hardening
// review, under real connections. One identity opens event streams until
// it is refused (429, naming the limit) at a quarter of max_connections;
// another identity still opens one, and /healthz answers. Sessions, legacy
// SSE streams among them, are likewise held to a quarter of max_sessions
// per identity.
func TestOneCallerCannotTakeEveryConnection(t *testing.T) {
	cfg := writeConfig(t, "", twoKeys(`  max_connections = 32
  max_sessions    = 200`))
	s := startServer(t, cfg)
	opened := 0
	var code int
	var body string
	for range 32 {
		if code, body = openStream(t, s.URL, callerAliceKey); code != http.StatusOK {
			break
		}
		opened++
	}
	if opened != 8 || code != http.StatusTooManyRequests || !strings.Contains(body, "max_streams_per_caller") {
		t.Fatalf("alice opened %d streams, then: %d %s; want 8 (a quarter of 32), then 429 naming listen.max_streams_per_caller", opened, code, body)
	}
	if code, body := openStream(t, s.URL, callerBobKey); code != http.StatusOK {
		t.Errorf("bob's stream while alice holds her share: %d %s", code, body)
	}
	resp, err := http.Get(s.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz while alice holds her share: %v %v", resp, err)
	}
	resp.Body.Close()

	// Sessions: a quarter of max_sessions, 2, a legacy SSE stream counting
	// as one.
	s = startServer(t, writeConfig(t, "", twoKeys(`  max_sessions = 8`)))
	session := func(key string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: &authTransport{token: key}}, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err == nil {
			t.Cleanup(func() { cs.Close() })
		}
		return err
	}
	for i := range 2 {
		if err := session(callerBobKey); err != nil {
			t.Fatalf("bob's session %d: %v", i+1, err)
		}
	}
	if err := session(callerBobKey); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("bob's third session: %v, want 429", err)
	}
	if code, body := openStream(t, s.URL, callerAliceKey); code != http.StatusOK {
		t.Fatalf("alice's SSE session: %d %s", code, body)
	}
	if err := session(callerAliceKey); err != nil {
		t.Fatalf("alice's second session: %v", err)
	}
	if code, body := openStream(t, s.URL, callerAliceKey); code != http.StatusTooManyRequests || !strings.Contains(body, "max_sessions_per_caller") {
		t.Errorf("alice's third session, an SSE stream: %d %s; want 429 naming listen.max_sessions_per_caller", code, body)
	}
}
