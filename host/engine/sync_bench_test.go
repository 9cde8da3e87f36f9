package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/store"
)

// BenchmarkSyncStoredServers is a sync of an engine whose store holds 50
// servers, none of which changed: the store read, the decoding of every
// stored definition (as mcphost validate would decode it) and the host's
// update, which finds nothing to do. It is what every write through the
// admin API, and every change another replica makes, costs.
func BenchmarkSyncStoredServers(b *testing.B) {
	ctx := context.Background()
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	}, nil))
	defer up.Close()
	st, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: filepath.Join(b.TempDir(), "m.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for i := range 50 {
		spec := fmt.Appendf(nil, `{"name":"s%02d","transport":"streamable-http","url":%q,"headers":{"X-Team":"t%d","X-Trace":"on"},`+
			`"timeout":"30s","connect_timeout":"5s","sessions":"per_client","max_sessions":8,"protocol_version":"2025-06-18"}`, i, up.URL+"/mcp", i)
		if _, err := st.Create(ctx, store.Server{Name: fmt.Sprintf("s%02d", i), Spec: spec}); err != nil {
			b.Fatal(err)
		}
	}
	e, err := Start(ctx, &config.File{Path: filepath.Join(b.TempDir(), "mcphost.hcl")}, &Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	cfg, _, err := e.merged(ctx, e.File())
	if err != nil || len(cfg.Servers) != 50 {
		b.Fatalf("%d servers served of 50: %v", len(cfg.Servers), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Sync(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
