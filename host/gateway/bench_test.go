package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// BenchmarkToolsListCached measures a cached tools/list of 1000 tools over
// streamable HTTP: what a client pays once the catalog and policies are
// settled.
func BenchmarkToolsListCached(b *testing.B) {
	h := manyToolsHost(b)
	cs := connectHTTP(b, h, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) < 1000 {
		b.Fatalf("%v, %d tools", err, len(res.Tools))
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolsListCachedRaw is the same listing read by a minimal HTTP
// client that does not decode it, as internal/bench's raw client times it:
// server=mcphost is the shortcut (fastlist.go) plus loopback HTTP;
// server=static serves the same bytes from a plain handler, the floor.
func BenchmarkToolsListCachedRaw(b *testing.B) {
	h := manyToolsHost(b)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	if err := cs.Ping(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	list := func(b *testing.B, url string) []byte {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Type") != "application/json" || resp.ContentLength <= 0 {
			b.Fatalf("not the shortcut: %s, %d bytes", resp.Header.Get("Content-Type"), resp.ContentLength)
		}
		buf := make([]byte, resp.ContentLength)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			b.Fatal(err)
		}
		return buf
	}
	listing := list(b, srv.URL+"/mcp")
	static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(listing)))
		_, _ = w.Write(listing)
	}))
	defer static.Close()
	for _, s := range []struct{ name, url string }{{"server=mcphost", srv.URL + "/mcp"}, {"server=static", static.URL}} {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(listing)))
			for b.Loop() {
				list(b, s.url)
			}
		})
	}
}

// manyToolsHost starts a host over ten manytools servers of 100 tools each.
func manyToolsHost(b *testing.B) *Host { return manyToolsHostWith(b, catalog.ToolsConfig{}) }

// manyToolsHostWith is manyToolsHost with a tools config.
func manyToolsHostWith(b *testing.B, tools catalog.ToolsConfig) *Host {
	b.Helper()
	bins, err := testproc.Build(b.TempDir(), map[string]string{"manytools": "../../internal/bench/testdata/manytools"})
	if err != nil {
		b.Fatal(err)
	}
	var servers []upstream.ServerConfig
	for i := range 10 {
		name := "s" + string(rune('a'+i))
		servers = append(servers, upstream.ServerConfig{Name: name, Command: bins["manytools"], Args: []string{"-tools", "100", "-name", name}})
	}
	h, err := New(Config{Servers: servers, Tools: tools}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return h
}

// BenchmarkSearchToolsCall is a search_tools call over streamable HTTP,
// with exposure = "search" over 1000 tools whose descriptions share most
// of their words (manytools), so every query term's postings hold every
// tool: the whole call as a client sees it. call=plain is a tools/call of
// one of those tools, through the upstream, for scale.
func BenchmarkSearchToolsCall(b *testing.B) {
	h := manyToolsHostWith(b, catalog.ToolsConfig{Exposure: catalog.ExposureSearch})
	cs := connectHTTP(b, h, nil)
	ctx := context.Background()
	search := &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "search the sf index for newest records", "limit": 5}}
	if res, err := cs.CallTool(ctx, search); err != nil || res.IsError {
		b.Fatalf("search_tools: %v", err)
	}
	for _, c := range []struct {
		name   string
		params *mcp.CallToolParams
	}{{"call=search_tools", search}, {"call=plain", &mcp.CallToolParams{Name: "sa__tool_0001", Arguments: map[string]any{}}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if res, err := cs.CallTool(ctx, c.params); err != nil || res.IsError {
					b.Fatalf("%s: %v", c.params.Name, err)
				}
			}
		})
	}
}

// BenchmarkToolsListSessionless is a cached tools/list of 1000 tools for
// a client of protocol 2026-07-28, read raw: shortcut is
// sessionlessShortcut's answer; go-sdk is the stateless handler's (the
// request asks for a log level, which the shortcut leaves to it).
func BenchmarkToolsListSessionless(b *testing.B) {
	h := manyToolsHost(b)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	for _, tc := range []struct{ name, meta string }{
		{"shortcut", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`},
		{"go-sdk", `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"emergency"}`},
	} {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + tc.meta + `}}`)
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest("POST", srv.URL+"/mcp", bytes.NewReader(body))
				for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
					"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"} {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n < 100_000 || (resp.Header.Get("Content-Type") == "application/json") != (tc.name == "shortcut") {
					b.Fatalf("%d, %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), n)
				}
			}
		})
	}
}
