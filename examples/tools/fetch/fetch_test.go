package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcphost-project/mcphost/internal/tooltest"
)

// hashGlobs are the files the plugin's build reads.
var hashGlobs = []string{"*.go", "../../../abi/*.go", "../../../abi/pdk/*.go", "../../../abi/pdk/tool/*.go", "../../../go.mod", "../../../go.sum"}

// TestFetchThroughMcphost builds the plugin, serves it with mcphost over
// HTTP with a local server as its one allowed host, and calls it as a
// client would.
func TestFetchThroughMcphost(t *testing.T) {
	var hits atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/repo":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"name":"mcphost","owner":{"login":"octo"},"topics":["mcp","wasm"]}`)
		case "/big":
			fmt.Fprint(w, strings.Repeat("é", 30000))
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	wasm := tooltest.BuildGo(t, "fetch", ".", hashGlobs)
	r := tooltest.Serve(t, t.TempDir(), fmt.Sprintf(`
tools_plugin "web" {
  source        = %q
  allowed_hosts = ["127.0.0.1"]
  timeout       = "10s"
}
`, wasm))

	res := r.Call(t, "web__fetch", map[string]any{"url": api.URL + "/repo", "pointer": "/owner/login"})
	if res.IsError || !strings.Contains(tooltest.Text(res), `"value":"octo"`) || !strings.Contains(tooltest.Text(res), `"status":200`) {
		t.Errorf("pointer: %q", tooltest.Text(res))
	}
	res = r.Call(t, "web__fetch", map[string]any{"url": api.URL + "/repo"})
	if res.IsError || !strings.Contains(tooltest.Text(res), `\"topics\"`) {
		t.Errorf("whole body: %q", tooltest.Text(res))
	}
	res = r.Call(t, "web__fetch", map[string]any{"url": api.URL + "/big", "max_bytes": 101})
	if txt := tooltest.Text(res); res.IsError || !strings.Contains(txt, `"truncated":true`) || strings.Count(txt, "é") != 50 {
		t.Errorf("max_bytes: %q", txt)
	}
	res = r.Call(t, "web__fetch", map[string]any{"url": api.URL + "/missing"})
	if !strings.Contains(tooltest.Text(res), `"status":404`) {
		t.Errorf("404: %q", tooltest.Text(res))
	}
	for _, c := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"url": "ftp://x/y"}, "url"},
		{map[string]any{"url": api.URL + "/repo", "pointer": "/owner/nope"}, "pointer"},
		{map[string]any{"url": api.URL + "/repo", "max_bytes": "ten"}, "max_bytes"},
		{map[string]any{}, "url"},
	} {
		res := r.Call(t, "web__fetch", c.args)
		if !res.IsError || !strings.HasPrefix(tooltest.Text(res), c.field+":") {
			t.Errorf("%v: want an error naming %s, got %q", c.args, c.field, tooltest.Text(res))
		}
	}
	// A host not granted: refused before any connection.
	before := hits.Load()
	other := strings.Replace(api.URL, "127.0.0.1", "localhost", 1)
	if res := r.Call(t, "web__fetch", map[string]any{"url": other + "/repo"}); !res.IsError {
		t.Errorf("a host not granted: %q", tooltest.Text(res))
	}
	if hits.Load() != before {
		t.Error("the host not granted was reached")
	}
}

func TestLookup(t *testing.T) {
	doc := map[string]any{"a/b": []any{1.0, map[string]any{"~x": "y"}}}
	if v, err := lookup(doc, "/a~1b/1/~0x"); err != nil || v != "y" {
		t.Errorf("got %v %v", v, err)
	}
	for _, p := range []string{"/nope", "/a~1b/2", "/a~1b/0/x"} {
		if _, err := lookup(doc, p); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}
