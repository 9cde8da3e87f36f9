package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// initSession opens a streamable HTTP session by hand (initialize, then
// initialized) and returns its id.
func initSession(tb testing.TB, url string) string {
	tb.Helper()
	post := func(body, session string) *http.Response {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			tb.Fatalf("POST %s: %s", body, resp.Status)
		}
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`, "")
	id := resp.Header.Get("Mcp-Session-Id")
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, id)
	return id
}

func heapAndStacks() uint64 {
	for range 3 {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// TestIdleSessionMemory reports what an idle downstream session costs
// (heap and goroutine stacks; run with -v to see the figure) and keeps it
// bounded.
func TestIdleSessionMemory(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	initSession(t, srv.URL+"/mcp") // warm up
	const n = 1000
	before := heapAndStacks()
	for range n {
		initSession(t, srv.URL+"/mcp")
	}
	http.DefaultClient.CloseIdleConnections()
	after := heapAndStacks()
	per := (int64(after) - int64(before)) / n
	t.Logf("%d idle sessions: %d bytes each (heap + stacks)", n, per)
	if per > 24<<10 {
		t.Errorf("an idle session costs %d bytes, want at most 24 KiB", per)
	}
}

// BenchmarkToolCallHTTP is the hot path over streamable HTTP: a go-sdk
// client calling a stdio upstream's echo tool through Handler.
func BenchmarkToolCallHTTP(b *testing.B) {
	h, err := New(Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	cs := connectHTTP(b, h, nil)
	args := map[string]any{"text": "hi"}
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkToolCallHTTPSessionless is BenchmarkToolCallHTTP for a client
// of protocol 2026-07-28, which has no session (sessionless.go). The two
// should cost about the same.
func BenchmarkToolCallHTTPSessionless(b *testing.B) {
	h, err := New(Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"text": "hi"}
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// At max_connections, an idle connection makes room for a new one; when
// every connection is busy with a request, a new one is answered 503 with
// Retry-After and a JSON-RPC error, and closed.
func TestConnectionCap(t *testing.T) {
	h := startHost(t, Config{Listen: listener.Config{MaxConnections: 2}, Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	addr := listenLoopback(t, h)

	get := func(c net.Conn) (*http.Response, error) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// Two idle keep-alive connections, then a third: it is served.
	for range 2 {
		if resp, err := get(dial()); err != nil || resp.StatusCode != 200 {
			t.Fatalf("idle connection: %v %v", resp, err)
		}
	}
	if resp, err := get(dial()); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a connection beyond idle ones was not served: %v %v", resp, err)
	}
	// Two connections busy with a request (an SSE stream each). A
	// connection that has not sent its whole header yet counts as idle,
	// and is the first to make room.
	// The server marks a connection idle just after it writes the
	// response the client has already read, so a stream may briefly find
	// every connection busy: it retries, as Retry-After asks.
	for i := range 2 {
		testproc.WaitFor(t, fmt.Sprintf("SSE stream %d to open", i+1), 10*time.Second, func() bool {
			c := dial()
			io.WriteString(c, "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("opening an SSE stream: %v", err)
			}
			return resp.StatusCode == 200
		})
	}
	var resp *http.Response
	testproc.WaitFor(t, "a refusal", 10*time.Second, func() bool {
		r, err := get(dial())
		resp = r
		return err == nil && r.StatusCode == http.StatusServiceUnavailable
	})
	if resp.Header.Get("Retry-After") == "" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("refusal headers: %v", resp.Header)
	}
}

// Legacy SSE sessions count against max_sessions from the moment their
// stream opens (they need never send a message), and give their place back
// when it closes.
func TestSSESessionCap(t *testing.T) {
	h := startHost(t, Config{Listen: listener.Config{MaxSessions: 2}, Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	addr := listenLoopback(t, h)

	// open starts an SSE stream and returns its connection and status.
	open := func() (net.Conn, int) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c, resp.StatusCode
	}
	var streams []net.Conn
	statuses := map[int]int{}
	for range 6 {
		c, code := open()
		statuses[code]++
		if code == http.StatusOK {
			streams = append(streams, c)
		}
	}
	if statuses[http.StatusOK] != 2 || statuses[http.StatusServiceUnavailable] != 4 {
		t.Fatalf("6 SSE streams with max_sessions = 2: %v by status, want 2 opened and 4 refused with 503", statuses)
	}
	streams[0].Close()
	testproc.WaitFor(t, "a closed stream to make room", 10*time.Second, func() bool {
		_, code := open()
		return code == http.StatusOK
	})
}

// listenLoopback serves h's listener (with its limits) on a free loopback
// port until the test ends, and returns the address.
func listenLoopback(t testing.TB, h *Host) string {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- h.ListenAndServe(ctx, "127.0.0.1:0", func(a net.Addr) { addrc <- a.String() }) }()
	t.Cleanup(func() { cancel(); <-done })
	return <-addrc
}
