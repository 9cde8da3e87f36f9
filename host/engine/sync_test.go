package engine

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/store"
)

// TestSyncRecordsRevisionOnlyWhenApplied: a sync the host does not take
// leaves the revision seen where it was, so that the poller tries again
// rather than taking the change as applied.
func TestSyncRecordsRevisionOnlyWhenApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := Start(ctx, &config.File{}, &Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	seen := func() int64 {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.storeRev
	}
	before := seen()
	if _, err := st.Create(ctx, store.Server{Name: "s", Spec: []byte(`{"name":"s","transport":"stdio","command":"sh"}`)}); err != nil {
		t.Fatal(err)
	}
	e.host.Close() // Reconfigure fails from now on
	if err := e.Sync(ctx); err == nil {
		t.Fatal("Sync on a closed host succeeded")
	}
	if got := seen(); got != before {
		t.Fatalf("the revision seen moved to %d (from %d) though the host did not take it", got, before)
	}
}
