package host

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	h := startHost(t, Config{Servers: []ServerConfig{stdioServer("a")}}, nil)
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
	h, err := New(Config{Servers: []ServerConfig{stdioServer("a")}}, nil)
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
