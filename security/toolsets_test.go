package security

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// postMCP sends one JSON-RPC message to path as key's caller, in session
// sid when not empty, and returns the answer's status, session id and
// body (an event stream's or a JSON body, read whole).
func postMCP(t *testing.T, base, path, key, sid, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// openSession initializes a session at path as key's caller.
func openSession(t *testing.T, base, path, key string) string {
	t.Helper()
	status, sid, body := postMCP(t, base, path, key, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize at %s: %d %q\n%s", path, status, sid, body)
	}
	if status, _, body := postMCP(t, base, path, key, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized at %s: %d\n%s", path, status, body)
	}
	return sid
}

// TestToolsetSessionsStayAtTheirEndpoint: a session opened at a toolset's
// endpoint is served there alone. Taken to /mcp (where the tools/list and
// tools/call shortcuts find sessions by id) or to another toolset, it is
// unknown; a /mcp session is unknown at a toolset's; another caller
// cannot use it; and a name outside the toolset is unknown there, even
// one the caller may call on /mcp.
func TestToolsetSessionsStayAtTheirEndpoint(t *testing.T) {
	cfg := writeConfig(t, "", twoKeys("")+`
toolset "pid" {
  servers = ["up"]
  tools   = ["pid"]
}
toolset "echo" {
  tools = ["echo"]
}
`)
	s := startServer(t, cfg)
	const echo = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"leaked"}}}`
	const list = `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`

	pidSession := openSession(t, s.URL, "/mcp/pid", callerAliceKey)
	for _, path := range []string{"/mcp", "/mcp/echo", "/sse/pid"} {
		for _, msg := range []string{echo, list} {
			status, _, body := postMCP(t, s.URL, path, callerAliceKey, pidSession, msg)
			if status == http.StatusOK || strings.Contains(body, "leaked") || strings.Contains(body, "up__echo") {
				t.Errorf("a /mcp/pid session at %s: %d, want it unknown there\n%s", path, status, body)
			}
		}
	}
	if _, _, body := postMCP(t, s.URL, "/mcp/pid", callerAliceKey, pidSession, list); !strings.Contains(body, "up__pid") || strings.Contains(body, "up__echo") {
		t.Errorf("tools/list at /mcp/pid lists what it does not serve:\n%s", body)
	}
	if _, _, body := postMCP(t, s.URL, "/mcp/pid", callerAliceKey, pidSession, echo); strings.Contains(body, "leaked") || !strings.Contains(body, "unknown tool") {
		t.Errorf("up__echo called at /mcp/pid:\n%s", body)
	}
	if status, _, body := postMCP(t, s.URL, "/mcp/pid", callerBobKey, pidSession, list); status == http.StatusOK {
		t.Errorf("bob used alice's /mcp/pid session: %d\n%s", status, body)
	}

	mcpSession := openSession(t, s.URL, "/mcp", callerAliceKey)
	if status, _, body := postMCP(t, s.URL, "/mcp/pid", callerAliceKey, mcpSession, echo); status == http.StatusOK || strings.Contains(body, "leaked") {
		t.Errorf("a /mcp session at /mcp/pid: %d\n%s", status, body)
	}
	for _, path := range []string{"/mcp/pid/", "/mcp/..%2Fmcp", "/mcp/pid%2F..", "/mcp/nope"} {
		if status, _, body := postMCP(t, s.URL, path, callerAliceKey, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`); status == http.StatusOK {
			t.Errorf("initialize at %s: %d\n%s", path, status, body)
		}
	}
}

// openSSEAt opens a legacy SSE stream at path as key's caller and returns
// the session id of its endpoint event; the stream stays open until the
// test ends.
func openSSEAt(t *testing.T, base, path, key string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer %s\r\n\r\n", path, key)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %v", path, resp, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("GET %s: no endpoint event: %v", path, err)
		}
		if _, id, ok := strings.Cut(line, "sessionid="); ok {
			return strings.TrimSpace(id)
		}
	}
}

// TestToolsetSessionsAreTheirCallers: a toolset's endpoints bind their
// sessions to the identity that opened them, as /mcp and /sse do (another
// caller's request for one is answered as for no session), and count
// against the caller's share of listen.max_sessions.
func TestToolsetSessionsAreTheirCallers(t *testing.T) {
	cfg := writeConfig(t, "", twoKeys("  max_sessions = 8")+`
toolset "pid" {
  tools = ["pid"]
}
`)
	s := startServer(t, cfg)
	sid := openSSEAt(t, s.URL, "/sse/pid", callerAliceKey)
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/sse/pid?sessionid="+sid, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+callerBobKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob posting into alice's /sse/pid session: %d, want 404", resp.StatusCode)
	}
	// The log line comes through a pipe, after the answer.
	testproc.WaitFor(t, "the refusal to be logged", 5*time.Second, func() bool {
		return strings.Contains(s.stderr.String(), "refused a request for another identity's session")
	})
	// A quarter of max_sessions each: bob's third session is refused,
	// wherever he opens it.
	openSession(t, s.URL, "/mcp/pid", callerBobKey)
	openSession(t, s.URL, "/mcp", callerBobKey)
	status, _, body := postMCP(t, s.URL, "/mcp/pid", callerBobKey, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`)
	if status != http.StatusTooManyRequests || !strings.Contains(body, "max_sessions") {
		t.Errorf("bob's third session, at /mcp/pid: %d, want 429 naming max_sessions\n%s", status, body)
	}
}
