// Package tooltest serves tool plugins in tests the way mcphost run does:
// an engine from an HCL config, its host over streamable HTTP on loopback,
// and a go-sdk client connected to it.
package tooltest

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// BuildGo builds the Go tool plugin in pkg (a directory, relative to the
// test's) with the module root at root, once per content of the files
// matching hashGlobs, into the user cache directory. It skips without go.
func BuildGo(t testing.TB, name, pkg string, hashGlobs []string) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	paths, err := testproc.BuildWasm(filepath.Join(base, "mcphost-test", "tools-"+name), hashGlobs,
		map[string]testproc.WasmGuest{name: {Pkg: pkg}})
	testproc.NeedGuests(t, err)
	return paths[name]
}

// Rig is an engine serving a config over HTTP, and a client connected to it.
type Rig struct {
	Engine *engine.Engine
	URL    string // the MCP endpoint
	Client *mcp.ClientSession
}

// Serve starts config (HCL; paths relative to dir) and connects a client.
func Serve(t testing.TB, dir, hcl string) *Rig {
	t.Helper()
	path := filepath.Join(dir, "mcphost.hcl")
	if err := os.WriteFile(path, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	file, diags := config.Load(path)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	log := hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: logWriter{t}})
	e, err := engine.Start(context.Background(), file, &engine.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Host().Handler())
	r := &Rig{Engine: e, URL: srv.URL + "/mcp"}
	c := mcp.NewClient(&mcp.Implementation{Name: "tooltest", Version: "1"}, nil)
	r.Client, err = c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.URL}, nil)
	if err != nil {
		srv.Close()
		e.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Client.Close()
		srv.Close()
		e.Close()
	})
	return r
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Call calls a tool and fails the test on a protocol error.
func (r *Rig) Call(t testing.TB, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Client.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// Text is a result's text content, joined.
func Text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
