package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestSecretArgsAndURLPath: an arg that secret_args marks and a URL that
// secret_url marks (a credential in its path) are sealed in the SQLite
// file, never returned (by a change's answer, by GET of the server, or by
// the list the console reads), kept when sent back masked, and reach the
// upstream as they were sent: the real stdio server reports its argv, the
// real HTTP server the path it was asked on. Not parallel, unlike the
// other tests: its unreachable address is free only while no test listens.
func TestSecretArgsAndURLPath(t *testing.T) {
	r := newRig(t, rigOptions{})
	const argSecret, pathSecret = "arg-s3cret-0123456789", "path-s3cret-0123456789"
	noSecret := func(what string, raw []byte) {
		t.Helper()
		for _, s := range []string{argSecret, pathSecret} {
			if bytes.Contains(raw, []byte(s)) {
				t.Fatalf("%s: a secret in the clear: %s", what, raw)
			}
		}
	}
	argv := func() []string {
		t.Helper()
		res, err := r.e.Host().CallTool(context.Background(), abi.Caller{}, "argv__argv", json.RawMessage(`{}`))
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("argv__argv: %v %+v", err, res)
		}
		return strings.Split(res.Content[0].(*mcp.TextContent).Text, "\n")
	}
	wantArgs := []string{"-name", "argv", "-argv", argSecret}

	// A stdio server whose last arg is a secret.
	def := r.upstream("argv", map[string]any{"args": wantArgs, "secret_args": []int{3}})
	a := r.do("POST", "/v1/servers", def)
	want(t, a, http.StatusCreated)
	noSecret("POST", a.raw)
	if args, _ := a.body["args"].([]any); len(args) != 4 || args[3] != config.Masked || args[2] != "-argv" || a.body["status"].(map[string]any)["state"] != "connected" {
		t.Fatalf("the secret arg is not shown masked, or the server did not connect: %s", a.raw)
	}
	if got := argv(); !slices.Equal(got, wantArgs) {
		t.Fatalf("the upstream got args %q, want %q", got, wantArgs)
	}

	// A remote server whose URL path holds a credential.
	up, lastPath, stopRemote := pathServer(t)
	secretPath := "/t/" + pathSecret + "/mcp"
	a = r.do("POST", "/v1/servers", map[string]any{"name": "remote", "transport": "streamable-http",
		"url": up + secretPath, "secret_url": true, "connect_timeout": "10s"})
	want(t, a, http.StatusCreated)
	noSecret("POST of a secret URL", a.raw)
	masked, _ := a.body["url"].(string)
	if masked != up+"/"+config.Masked || a.body["secret_url"] != true || a.body["status"].(map[string]any)["state"] != "connected" {
		t.Fatalf("secret URL: %s", a.raw)
	}
	if got := lastPath(); got != secretPath {
		t.Fatalf("the upstream was asked on %q, want %q", got, secretPath)
	}

	// A server that fails: its status quotes the URL it could not reach.
	dead := "http://" + testproc.FreeAddr(t) + secretPath
	a = r.do("POST", "/v1/servers", map[string]any{"name": "dead", "transport": "streamable-http",
		"url": dead, "secret_url": true, "connect_timeout": "2s"})
	want(t, a, http.StatusCreated)
	noSecret("POST of an unreachable secret URL", a.raw)
	testproc.WaitFor(t, "the unreachable server's error", 10*time.Second, func() bool { return r.status("dead").Error != "" })
	if st := r.status("dead"); strings.Contains(st.Error+st.Stderr, pathSecret) || !strings.Contains(st.Error, "[REDACTED]") {
		t.Fatalf("the status of an unreachable secret URL: %q", st.Error)
	}

	// What the console reads, and each server.
	noSecret("GET /v1/servers", r.do("GET", "/v1/servers", nil).raw)
	noSecret("GET argv", r.do("GET", "/v1/servers/argv", nil).raw)
	noSecret("GET remote", r.do("GET", "/v1/servers/remote", nil).raw)
	noSecret("GET dead", r.do("GET", "/v1/servers/dead", nil).raw)

	// Sent back masked, the stored values stay, and the restarted server
	// gets the real ones.
	pid := r.status("argv").PID
	p := r.do("PATCH", "/v1/servers/argv", `{"timeout":"9s"}`)
	want(t, p, http.StatusOK)
	noSecret("PATCH", p.raw)
	if r.status("argv").PID == pid {
		t.Fatalf("the patch did not restart the server: %s", p.raw)
	}
	if got := argv(); !slices.Equal(got, wantArgs) {
		t.Fatalf("after a patch the upstream got args %q, want %q", got, wantArgs)
	}
	put := r.do("PUT", "/v1/servers/argv", r.upstream("argv", map[string]any{"args": []string{"-name", "argv", "-argv", config.Masked}, "secret_args": []int{3}, "timeout": "8s"}))
	want(t, put, http.StatusOK)
	noSecret("PUT", put.raw)
	if got := argv(); !slices.Equal(got, wantArgs) {
		t.Fatalf("after a masked PUT the upstream got args %q, want %q", got, wantArgs)
	}
	put = r.do("PUT", "/v1/servers/remote", map[string]any{"transport": "streamable-http", "url": masked, "secret_url": true, "timeout": "8s", "connect_timeout": "10s"})
	want(t, put, http.StatusOK)
	noSecret("PUT of the masked URL", put.raw)
	if put.body["status"].(map[string]any)["state"] != "connected" || lastPath() != secretPath {
		t.Fatalf("after a masked PUT the upstream was asked on %q: %s", lastPath(), put.raw)
	}

	// "********" is a stored secret only where secret_args lists it: not
	// taken off the list (that would store it in the clear), nor in a new
	// definition.
	bad := r.do("PATCH", "/v1/servers/argv", `{"secret_args":null}`)
	want(t, bad, http.StatusUnprocessableEntity)
	if !strings.Contains(string(bad.raw), `"field":"args"`) {
		t.Fatalf("masked arg off secret_args: %s", bad.raw)
	}
	bad = r.do("POST", "/v1/servers", r.upstream("new", map[string]any{"args": []string{config.Masked}, "secret_args": []int{0}}))
	want(t, bad, http.StatusUnprocessableEntity)
	bad = r.do("POST", "/v1/servers", r.upstream("new", map[string]any{"secret_args": []int{2}}))
	want(t, bad, http.StatusUnprocessableEntity)
	if !strings.Contains(string(bad.raw), `"field":"secret_args"`) {
		t.Fatalf("secret_args past the end of args: %s", bad.raw)
	}

	// A call once the secret URL's server is gone: the error the client
	// gets quotes the URL, masked.
	stopRemote()
	res, err := r.e.Host().CallTool(context.Background(), abi.Caller{}, "remote__ping", json.RawMessage(`{}`))
	if err != nil || !res.IsError || len(res.Content) == 0 {
		t.Fatalf("a call to a server that is gone: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; strings.Contains(text, pathSecret) || !strings.Contains(text, "[REDACTED]") {
		t.Fatalf("the error of a call to a server that is gone: %q", text)
	}

	// The store's rows, and the SQLite files as any reader of the disk
	// sees them, hold the secrets sealed only.
	rows, err := rawStore(t, r).Query(`SELECT name, spec, secrets FROM mcphost_servers`)
	if err != nil {
		t.Fatal(err)
	}
	sealed := map[string]bool{}
	for rows.Next() {
		var name, spec, secrets string
		if err := rows.Scan(&name, &spec, &secrets); err != nil {
			t.Fatal(err)
		}
		noSecret("row "+name, []byte(spec+secrets))
		sealed[name] = secrets != ""
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !sealed["argv"] || !sealed["remote"] {
		t.Fatalf("sealed secrets by row: %v; want argv and remote", sealed)
	}
	files, _ := filepath.Glob(filepath.Join(r.dir, "mcphost.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		noSecret(f, b)
	}
	if len(files) == 0 {
		t.Fatal("no SQLite file to read")
	}
}

// pathServer is an MCP server over streamable HTTP, at any path, that
// records the path its last request was sent to.
func pathServer(t *testing.T) (url string, lastPath func() string, stop func()) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "pathed", Version: "1"}, nil)
	type none struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var path string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		path = r.URL.Path
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	stop = func() { ts.CloseClientConnections(); ts.Close() }
	t.Cleanup(stop)
	return ts.URL, func() string {
		mu.Lock()
		defer mu.Unlock()
		return path
	}, stop
}
