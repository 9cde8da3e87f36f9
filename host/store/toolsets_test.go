package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcphost-project/mcphost/host/store"
)

// TestToolsets: put, replace under If-Match, list and delete toolsets on
// every driver; each change moves the revision replicas poll.
func TestToolsets(t *testing.T) {
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, o)
			rev0, err := s.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			a, created, err := s.PutToolset(ctx, "ide", []byte(`{"servers":["fs"]}`), 0)
			if err != nil || !created || a.Version != rev0+1 {
				t.Fatalf("put: %+v %v %v, want created at version %d", a, created, err, rev0+1)
			}
			if _, _, err := s.PutToolset(ctx, "ide", []byte(`{}`), a.Version+100); !errors.Is(err, store.ErrVersion) {
				t.Fatalf("put with a stale If-Match: %v", err)
			}
			b, created, err := s.PutToolset(ctx, "ide", []byte(`{"tools":["read_*"]}`), a.Version)
			if err != nil || created || b.Version <= a.Version || !b.Created.Equal(a.Created) {
				t.Fatalf("replace: %+v %v %v", b, created, err)
			}
			if _, _, err := s.PutToolset(ctx, "agent", []byte(`{}`), 0); err != nil {
				t.Fatal(err)
			}
			ts, err := s.Toolsets(ctx)
			if err != nil || len(ts) != 2 || ts[0].Name != "agent" || ts[1].Name != "ide" || string(ts[1].Spec) != `{"tools":["read_*"]}` {
				t.Fatalf("list: %+v %v", ts, err)
			}
			if rev, _ := s.Revision(ctx); rev != b.Version+1 {
				t.Errorf("revision %d after the writes, want %d", rev, b.Version+1)
			}
			if err := s.DeleteToolset(ctx, "ide", 0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Toolset(ctx, "ide"); !errors.Is(err, store.ErrNoToolset) {
				t.Errorf("get after delete: %v", err)
			}
			if err := s.DeleteToolset(ctx, "ide", 0); !errors.Is(err, store.ErrNoToolset) {
				t.Errorf("second delete: %v", err)
			}
		})
	}
}
