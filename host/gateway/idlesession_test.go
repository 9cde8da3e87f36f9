package gateway

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

var (
	idleHeapProfile = flag.String("idle.heapprofile", "", "BenchmarkIdleSession writes a heap profile to this file while its sessions are open")
	idleAddr        = flag.String("idle.addr", "", "BenchmarkIdleSession opens its sessions at this address (an `mcphost run`) instead of in the test process")
	idleSSE         = flag.Bool("idle.sse", false, "BenchmarkIdleSession opens legacy SSE sessions (GET /sse, protocol 2024-11-05) instead of streamable ones")
	idlePID         = flag.Int("idle.pid", 0, "with -idle.addr: the process whose /proc/PID/status BenchmarkIdleSession reads (VmRSS, RssAnon)")
)

// rawExchange writes one HTTP/1.1 request on c and reads its whole
// response.
func rawExchange(c net.Conn, method, path string, header map[string]string, body string) (*http.Response, string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n" + body)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, b.String()); err != nil {
		return nil, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, "", err
	}
	if method == http.MethodGet && resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp, "", nil // the stream stays open
	}
	got, err := io.ReadAll(resp.Body)
	return resp, string(got), err
}

// openIdleSession opens a streamable HTTP session the way the go-sdk's and
// the TypeScript SDK's clients do, on two connections of its own: the
// keep-alive one its POSTs came on (initialize, initialized, tools/list),
// left idle, and the standalone GET stream, left open. The client side is
// raw connections with no goroutine and little heap, so what the process
// gains is the server's.
func openIdleSession(tb testing.TB, addr string) (post, stream net.Conn) {
	tb.Helper()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
	post, stream = dial(), dial()
	hdr := map[string]string{"Accept": "application/json, text/event-stream"}
	resp, body, err := rawExchange(post, "POST", "/mcp", hdr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(body, `"result"`) {
		tb.Fatalf("initialize: %v %v %s", resp, err, body)
	}
	hdr["Mcp-Session-Id"] = resp.Header.Get("Mcp-Session-Id")
	hdr["Mcp-Protocol-Version"] = "2025-11-25"
	if resp, _, err := rawExchange(post, "POST", "/mcp", hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || resp.StatusCode/100 != 2 {
		tb.Fatalf("initialized: %v %v", resp, err)
	}
	if resp, body, err := rawExchange(post, "POST", "/mcp", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); err != nil || !strings.Contains(body, `"tools"`) {
		tb.Fatalf("tools/list: %v %v %s", resp, err, body)
	}
	hdr["Accept"] = "text/event-stream"
	if resp, _, err := rawExchange(stream, "GET", "/mcp", hdr, ""); err != nil || resp.StatusCode != 200 {
		tb.Fatalf("GET stream: %v %v", resp, err)
	}
	return post, stream
}

// openIdleSSESession opens a legacy SSE session (protocol 2024-11-05) as
// the SDK clients do: the stream (GET /sse), left open, and the keep-alive
// connection its POSTs came on (initialize, initialized, tools/list),
// left idle. The answers come on the stream, read through a small buffer
// dropped afterwards.
func openIdleSSESession(tb testing.TB, addr string) (post, stream net.Conn) {
	tb.Helper()
	var err error
	if post, err = net.Dial("tcp", addr); err != nil {
		tb.Fatal(err)
	}
	if stream, err = net.Dial("tcp", addr); err != nil {
		tb.Fatal(err)
	}
	resp, _, err := rawExchange(stream, "GET", "/sse", map[string]string{"Accept": "text/event-stream"}, "")
	if err != nil || resp.StatusCode != 200 {
		tb.Fatalf("GET /sse: %v %v", resp, err)
	}
	stream.SetDeadline(time.Now().Add(20 * time.Second))
	defer stream.SetDeadline(time.Time{})
	events := bufio.NewReaderSize(resp.Body, 16)
	until := func(prefix string) string {
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				tb.Fatalf("reading the SSE stream for %q: %v", prefix, err)
			}
			if strings.HasPrefix(line, prefix) {
				return strings.TrimSpace(line)
			}
		}
	}
	endpoint := strings.TrimPrefix(until("data: /sse?sessionid="), "data: ")
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		if resp, body, err := rawExchange(post, "POST", endpoint, nil, m); err != nil || resp.StatusCode/100 != 2 {
			tb.Fatalf("POST %s: %v %v %s", m, resp, err, body)
		}
	}
	until(`data: {"jsonrpc":"2.0","id":2,"result":{"tools"`)
	return post, stream
}

// idleSessionCost opens n idle sessions (openIdleSession) against a host
// served on loopback as `mcphost run` serves it, and returns the
// goroutines, the bytes of live heap and the bytes of goroutine stacks
// each one adds, once the count of goroutines has settled at or below
// settleAt a session (0: at the first reading).
func idleSessionCost(tb testing.TB, n int, settleAt float64, profile string) (goroutines float64, heap, stacks int64) {
	h := startHost(tb, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	addr := listenLoopback(tb, h)
	var conns []net.Conn
	tb.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	open := openIdleSession
	if *idleSSE {
		open = openIdleSSESession
	}
	p, s := open(tb, addr) // warm up
	conns = append(conns, p, s)
	g0 := runtime.NumGoroutine()
	h0, s0 := heapStacks()
	for range n {
		p, s := open(tb, addr)
		conns = append(conns, p, s)
	}
	perSession := func() float64 { return float64(runtime.NumGoroutine()-g0) / float64(n) }
	if settleAt > 0 {
		// A POST's handler may still be on its way out after the client
		// has its answer.
		testproc.WaitFor(tb, fmt.Sprintf("at most %.0f goroutines an idle session", settleAt), 10*time.Second, func() bool {
			return perSession() <= settleAt
		})
	}
	h1, s1 := heapStacks()
	goroutines, heap, stacks = perSession(), (h1-h0)/int64(n), (s1-s0)/int64(n)
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			tb.Fatal(err)
		}
	}
	return goroutines, heap, stacks
}

// heapStacks returns the live heap and the goroutine stacks in use, after
// collections (which also shrink stacks that are mostly unused).
func heapStacks() (heap, stacks int64) {
	for range 3 {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc), int64(m.StackInuse)
}

// BenchmarkIdleSession reports what an idle streamable HTTP session costs
// the gateway: goroutines and bytes (live heap and goroutine stacks) a
// session, with b.N sessions open at once (run it with -benchtime 500x).
// -idle.heapprofile writes a heap profile with them open.
//
// With -idle.addr and -idle.pid it measures an `mcphost run` instead: the
// growth of its VmRSS and RssAnon a session, read 3 s after the last
// session opened against a warm-up one.
func BenchmarkIdleSession(b *testing.B) {
	if *idleAddr != "" {
		rss, anon := idleSessionRSS(b, *idleAddr, *idlePID, b.N)
		b.ReportMetric(float64(rss), "rss-B/session")
		b.ReportMetric(float64(anon), "anon-B/session")
		b.ReportMetric(0, "ns/op")
		return
	}
	goroutines, heap, stacks := idleSessionCost(b, b.N, 0, *idleHeapProfile)
	b.ReportMetric(goroutines, "goroutines/session")
	b.ReportMetric(float64(heap), "heap-B/session")
	b.ReportMetric(float64(stacks), "stack-B/session")
	b.ReportMetric(0, "ns/op")
}

// An idle session holds five goroutines of the server: on its stream's
// connection the handler waiting in the go-sdk and net/http's background
// read; the go-sdk's reader of the session's messages; mcphost's wait for
// its end (trackSession: the go-sdk has no session-closed callback); and on
// the idle connection its POSTs came on, net/http's wait for the next
// request. One more a session fails the test.
func TestIdleSessionGoroutines(t *testing.T) {
	const n, want = 50, 5
	goroutines, _, _ := idleSessionCost(t, n, want, "")
	t.Logf("%d idle sessions: %.2f goroutines each", n, goroutines)
}

// idleSessionRSS opens n idle sessions at addr and returns the growth of
// pid's VmRSS and RssAnon a session.
func idleSessionRSS(tb testing.TB, addr string, pid, n int) (rss, anon int64) {
	var conns []net.Conn
	tb.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	open := openIdleSession
	if *idleSSE {
		open = openIdleSSESession
	}
	p, s := open(tb, addr) // warm up
	conns = append(conns, p, s)
	time.Sleep(3 * time.Second)
	rss0, anon0 := procStatus(tb, pid)
	for range n {
		p, s := open(tb, addr)
		conns = append(conns, p, s)
	}
	time.Sleep(3 * time.Second) // as the earlier runs in docs/BENCHMARKS.md
	rss1, anon1 := procStatus(tb, pid)
	return (rss1 - rss0) / int64(n), (anon1 - anon0) / int64(n)
}

// procStatus reads VmRSS and RssAnon of pid, in bytes.
func procStatus(tb testing.TB, pid int) (rss, anon int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			rss = kb << 10
		} else if _, err := fmt.Sscanf(line, "RssAnon: %d kB", &kb); err == nil {
			anon = kb << 10
		}
	}
	return rss, anon
}
