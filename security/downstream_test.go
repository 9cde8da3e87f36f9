package security

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Attacks by downstream clients: one that stops reading, idle and slow
// connections, too many sessions, foreign Host headers, and secrets in
// upstream URLs.

// A client that sets logging to debug, calls a tool that logs a lot and
// never reads its stream (its receive buffer is tiny) must not stall the
// shared upstream: another client's calls to the same server go on
// promptly, the slow client's notifications are dropped, and its session
// is closed once a write has been blocked for write_timeout.
func TestSlowReaderDoesNotStallOthers(t *testing.T) {
	cfg := writeConfig(t, "", `
listen {
  write_timeout = "3s"
}
server "up" {
  command = "UPSTREAM"
}
`)
	s := startServer(t, cfg)
	cs := connect(t, s.URL, nil)
	promptEcho := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "still here"}})
		if err != nil || res.IsError {
			t.Fatalf("another client's call failed after %v while a client does not read: %v %+v", time.Since(start), err, res)
		}
	}
	promptEcho()

	slow := dialSlow(t, s.URL)
	slow.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}`)
	slow.roundTrip(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	slow.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`)
	// 4000 messages of 8 KiB: far more than the kernel buffers between
	// mcphost and a client that does not read.
	slow.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"up__log_burst","arguments":{"count":4000,"size":8192}}}`)

	testproc.WaitFor(t, "mcphost to drop the slow client's log messages", time.Minute, func() bool {
		promptEcho()
		return strings.Contains(s.stderr.String(), "not reading fast enough")
	})
	for range 5 {
		promptEcho()
	}
	testproc.WaitFor(t, "mcphost to close the slow client's session", time.Minute, func() bool {
		promptEcho()
		return strings.Contains(s.stderr.String(), "closing a downstream session that stopped reading") ||
			strings.Contains(s.stderr.String(), "session ended with notifications dropped")
	})
	promptEcho()
	// mcphost hung up on the slow client: what it buffered drains, then
	// the connection ends.
	slow.conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.Copy(io.Discard, slow.r); err != nil && !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("the slow client's connection is still open: %v", err)
	}
}

// A client subscribed to a resource that stops reading its stream must not
// hold up the resource's updates to other subscribers, nor the upstream
// (the go-sdk writes an update to each subscriber in turn, on the
// upstream's notification handler, and a write to a client that does not
// read blocks for write_timeout): the other subscriber gets the last
// update promptly and its calls go on.
func TestSlowSubscriberDoesNotStallOthers(t *testing.T) {
	if raceEnabled {
		t.Skip("the reading subscriber, instrumented by the race detector, cannot keep up with the burst")
	}
	cfg := writeConfig(t, "", `
listen {
  write_timeout = "20s"
}
server "up" {
  command = "UPSTREAM"
  args    = ["-subscribable"]
}
`)
	s := startServer(t, cfg)
	const updates = 3000
	last := make(chan struct{})
	var once sync.Once
	good := connect(t, s.URL, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if seq, _ := r.Params.Meta["seq"].(float64); seq == updates-1 {
				once.Do(func() { close(last) })
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := good.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://ticker"}); err != nil {
		t.Fatal(err)
	}

	slow := dialSlow(t, s.URL)
	slow.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}`)
	slow.roundTrip(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	slow.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://ticker"}}`)
	// The stream updates go to, opened and never read.
	stream := dialSlow(t, s.URL)
	fmt.Fprintf(stream.conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n", stream.addr, slow.session)
	stream.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if resp, err := http.ReadResponse(stream.r, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("opening the slow client's stream: %v %v", resp, err)
	}

	// 3000 updates with 8 KiB of _meta each: far more than the kernel
	// buffers between mcphost and the slow client.
	start := time.Now()
	res, err := good.CallTool(ctx, &mcp.CallToolParams{Name: "up__update_burst", Arguments: map[string]any{"count": updates, "size": 8192}})
	if err != nil || res.IsError {
		t.Fatalf("update_burst after %v: %v %+v", time.Since(start), err, res)
	}
	select {
	case <-last:
		t.Logf("the last of %d updates reached the reading subscriber after %v", updates, time.Since(start))
	case <-time.After(10 * time.Second): // half of write_timeout: before the fix, a whole one
		t.Fatalf("the reading subscriber did not get the last update within 10s of the burst (a client that does not read holds it up)")
	}
	if got, isErr := callText(t, good, "up__echo", map[string]any{"text": "still here"}); isErr || got != "still here" {
		t.Fatalf("echo after the burst: %q %v", got, isErr)
	}
	testproc.WaitFor(t, "mcphost to drop or close the slow subscriber", time.Minute, func() bool {
		return strings.Contains(s.stderr.String(), "not reading fast enough") ||
			strings.Contains(s.stderr.String(), "closing a downstream session that stopped reading")
	})
}

// slowClient speaks streamable HTTP by hand on one connection whose
// receive buffer is as small as the kernel allows.
type slowClient struct {
	t       *testing.T
	addr    string
	conn    net.Conn
	r       *bufio.Reader
	session string
}

func dialSlow(t *testing.T, base string) *slowClient {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &slowClient{t: t, addr: addr, conn: conn, r: bufio.NewReader(conn)}
}

func (c *slowClient) send(body string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", c.addr, len(body))
	if c.session != "" {
		fmt.Fprintf(&b, "Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\n", c.session)
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		c.t.Fatal(err)
	}
}

// roundTrip sends one message and reads its whole answer.
func (c *slowClient) roundTrip(body string) {
	c.t.Helper()
	c.send(body)
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer c.conn.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode/100 != 2 {
		c.t.Fatalf("%s: %s %s %v", body, resp.Status, b, err)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
}

// Idle keep-alive connections to /healthz (which needs no token) must not
// use up the process's descriptors and lock out a client with a token.
// mcphost runs with 256 descriptors here; 600 idle connections are opened.
func TestIdleConnectionsDoNotLockOut(t *testing.T) {
	cfg := writeConfig(t, "", `
listen {
  auth_token      = "tok"
  max_connections = 64
}
server "up" {
  command = "UPSTREAM"
}
`)
	s := startServerNoFile(t, cfg, 256)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	for range 600 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL, "http://"), 5*time.Second)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
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
	c := mcp.NewClient(&mcp.Implementation{Name: "authorised", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("an authorised client could not connect after 600 idle connections: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "served"}})
	if err != nil || res.IsError {
		t.Fatalf("an authorised client's call failed after 600 idle connections: %v %+v", err, res)
	}
}

type authTransport struct{ token string }

func (a *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return http.DefaultTransport.RoundTrip(r)
}

// startServerNoFile is startServer with the process's descriptors capped
// (soft and hard, so the Go runtime cannot raise them).
func startServerNoFile(t *testing.T, config string, nofile int) *server {
	t.Helper()
	addr := testproc.FreeAddr(t)
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile),
		mcphostBin, "run", config, "--http", addr, "--log-level", "debug")
	return launch(t, cmd, addr)
}

// A request body that never arrives is given read_timeout, not forever.
func TestSlowBodyIsCut(t *testing.T) {
	cfg := writeConfig(t, "", `
listen {
  read_timeout = "2s"
}
server "up" {
  command = "UPSTREAM"
}
`)
	s := startServer(t, cfg)
	c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{")
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.Copy(io.Discard, c) // until mcphost answers and closes
	if err != nil {
		t.Fatalf("mcphost held a slow body open for %v: %v", time.Since(start).Round(time.Second), err)
	}
}

// At listen.max_sessions, a new session is refused with 503, a JSON-RPC
// error that says why, and Retry-After; a session that ends makes room.
func TestSessionCap(t *testing.T) {
	cfg := writeConfig(t, "", `
listen {
  max_sessions = 2
}
server "up" {
  command = "UPSTREAM"
}
`)
	s := startServer(t, cfg)
	connect(t, s.URL, nil)
	second := connect(t, s.URL, nil)
	initialize := func() (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", s.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"third","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := initialize()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third session: %s (Retry-After %q) %s; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"), body)
	}
	var msg struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.JSONRPC != "2.0" || !strings.Contains(msg.Error.Message, "max_sessions") {
		t.Fatalf("third session's answer %s is not a JSON-RPC error naming max_sessions (%v)", body, err)
	}
	second.Close()
	testproc.WaitFor(t, "room for a new session", 30*time.Second, func() bool {
		resp, _ := initialize()
		return resp.StatusCode == http.StatusOK
	})
}

// /status, /healthz and every other path refuse a foreign Host header
// (DNS rebinding) and a foreign Origin, as /mcp does.
func TestForeignHostRefusedEverywhere(t *testing.T) {
	cfg := writeConfig(t, "", `
server "up" {
  command = "UPSTREAM"
}
`)
	s := startServer(t, cfg)
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, path := range []string{"/status", "/healthz", "/mcp", "/sse", "/other"} {
		for _, h := range []struct{ host, origin string }{{"evil.example", ""}, {"", "https://evil.example"}} {
			req, _ := http.NewRequest("GET", s.URL+path, nil)
			if h.host != "" {
				req.Host = h.host
			}
			if h.origin != "" {
				req.Header.Set("Origin", h.origin)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("GET %s with Host %q Origin %q: %v", path, h.host, h.origin, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s with Host %q Origin %q: %s %.80s; want 403", path, h.host, h.origin, resp.Status, b)
			}
		}
	}
}

// listen.allowed_origins lets a browser app on another origin call
// mcphost; every other foreign origin is still refused.
func TestAllowedOrigins(t *testing.T) {
	cfg := writeConfig(t, "", `
listen {
  allowed_origins = ["https://app.example.com"]
}
server "up" {
  command = "UPSTREAM"
}
`)
	s := startServer(t, cfg)
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, c := range []struct {
		origin string
		want   int
	}{{"https://app.example.com", http.StatusOK}, {"https://evil.example", http.StatusForbidden}, {"http://app.example.com", http.StatusForbidden}} {
		req, _ := http.NewRequest("POST", s.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"browser","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", c.origin)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("initialize from Origin %q: %s %.120s; want %d", c.origin, resp.Status, b, c.want)
		}
	}
}

// A secret in an upstream URL's query reaches neither /status nor the log
// (at debug level), as the userinfo password does not.
func TestURLSecretsMasked(t *testing.T) {
	dead := testproc.FreeAddr(t) // nothing listens there: connecting fails and the error quotes the URL
	cfg := writeConfig(t, "", fmt.Sprintf(`
server "web" {
  transport = "streamable-http"
  url       = "http://user:PASSWORDSECRET@%s/mcp?x=1&token=TOKENSECRET&Api_Key=KEYSECRET"
}
server "up" {
  command = "UPSTREAM"
}
`, dead))
	s := startServer(t, cfg)
	var status string
	testproc.WaitFor(t, "web's failure in /status", time.Minute, func() bool {
		resp, err := http.Get(s.URL + "/status")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status = string(b)
		return strings.Contains(status, "mcp?x=1")
	})
	for _, secret := range []string{"PASSWORDSECRET", "TOKENSECRET", "KEYSECRET"} {
		if strings.Contains(status, secret) {
			t.Errorf("/status shows %s: %s", secret, status)
		}
		if strings.Contains(s.stderr.String(), secret) {
			t.Errorf("the log shows %s", secret)
		}
	}
	if !strings.Contains(status, "token=xxxxx") {
		t.Errorf("/status does not show the masked URL: %s", status)
	}
}
