package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
	"github.com/mcphost-project/mcphost/internal/tooltest"
)

// hashGlobs are the files the plugin's build reads.
var hashGlobs = []string{"*.go", "../../../abi/*.go", "../../../abi/pdk/*.go", "../../../abi/pdk/tool/*.go", "../../../go.mod", "../../../go.sum"}

// TestFetchThroughMcphost builds the plugin, serves it with mcphost over
// HTTP with a local server as its one allowed host, and calls it as a
// client would.
func TestFetchThroughMcphost(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestRefusedURLsDoNotTakeFetchFromOthers is issue 29's M8: one client
// sends URLs outside allowed_hosts as fast as it can while another makes
// valid calls. The refused client gets the host's refusal as its own
// isError result, and the tool stays up for the other client throughout.
func TestRefusedURLsDoNotTakeFetchFromOthers(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	defer api.Close()
	wasm := tooltest.BuildGo(t, "fetch", ".", hashGlobs)
	r := tooltest.Serve(t, t.TempDir(), fmt.Sprintf(`
tools_plugin "web" {
  source        = %q
  allowed_hosts = ["127.0.0.1"]
  instances     = 2
}
`, wasm))
	attacker, err := mcp.NewClient(&mcp.Implementation{Name: "attacker", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer attacker.Close()

	refused := strings.Replace(api.URL, "127.0.0.1", "localhost", 1) + "/x"
	stop := make(chan struct{})
	var attacks, wrong atomic.Int32
	var firstWrong atomic.Value
	attackDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				attackDone <- nil
				return
			default:
			}
			res, err := attacker.CallTool(context.Background(), &mcp.CallToolParams{Name: "web__fetch", Arguments: map[string]any{"url": refused}})
			if err != nil {
				attackDone <- err
				return
			}
			if txt := tooltest.Text(res); !res.IsError || !strings.HasPrefix(txt, "refused by allowed_hosts: ") {
				wrong.Add(1)
				firstWrong.CompareAndSwap(nil, fmt.Sprintf("isError=%v %q", res.IsError, txt))
			}
			attacks.Add(1)
		}
	}()
	// The attacker is well under way before the first valid call, and
	// keeps going until the last.
	testproc.WaitFor(t, "the refused calls to start", 30*time.Second, func() bool { return attacks.Load() >= 10 })
	// At least 40 valid calls, and as many as it takes for 20 more refused
	// calls to run alongside (the valid ones can outpace them).
	failed, before, valid := 0, attacks.Load(), 0
	for i := 0; (i < 40 || attacks.Load() < before+20) && i < 5000; i++ {
		valid++
		res := r.Call(t, "web__fetch", map[string]any{"url": api.URL + "/ok"})
		if res.IsError || !strings.Contains(tooltest.Text(res), `"status":200`) {
			failed++
			if failed == 1 {
				t.Errorf("valid call %d (after %d refused calls): %q", i, attacks.Load(), tooltest.Text(res))
			}
		}
	}
	close(stop)
	if err := <-attackDone; err != nil {
		t.Error(err)
	}
	if n := wrong.Load(); n > 0 {
		t.Errorf("%d of %d refused calls did not answer \"refused by allowed_hosts: ...\" as an isError result; the first: %s", n, attacks.Load(), firstWrong.Load())
	}
	if failed > 0 {
		t.Errorf("%d of %d valid calls failed while another client's calls were refused", failed, valid)
	}
	if n := attacks.Load() - before; n < 20 {
		t.Errorf("only %d refused calls ran alongside %d valid ones", n, valid)
	}
}
