package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcphost-project/mcphost/host/store"
)

// TestQuotas: put, replace under If-Match, list and delete quotas on
// every driver; each change moves the revision replicas poll.
func TestQuotas(t *testing.T) {
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, o)
			rev0, err := s.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			a, created, err := s.PutQuota(ctx, "q", []byte(`{"calls":1}`), 0)
			if err != nil || !created || a.Version != rev0+1 {
				t.Fatalf("put: %+v %v %v, want created at version %d", a, created, err, rev0+1)
			}
			if _, _, err := s.PutQuota(ctx, "q", []byte(`{"calls":2}`), a.Version+100); !errors.Is(err, store.ErrVersion) {
				t.Fatalf("put with a stale If-Match: %v", err)
			}
			b, created, err := s.PutQuota(ctx, "q", []byte(`{"calls":2}`), a.Version)
			if err != nil || created || b.Version <= a.Version || !b.Created.Equal(a.Created) {
				t.Fatalf("replace: %+v %v %v", b, created, err)
			}
			if _, _, err := s.PutQuota(ctx, "r", []byte(`{"concurrent":1}`), 0); err != nil {
				t.Fatal(err)
			}
			qs, err := s.Quotas(ctx)
			if err != nil || len(qs) != 2 || qs[0].Name != "q" || string(qs[0].Spec) != `{"calls":2}` || qs[1].Name != "r" {
				t.Fatalf("list: %+v %v", qs, err)
			}
			if rev, _ := s.Revision(ctx); rev != b.Version+1 {
				t.Errorf("revision %d after the writes, want %d", rev, b.Version+1)
			}
			if err := s.DeleteQuota(ctx, "q", 0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Quota(ctx, "q"); !errors.Is(err, store.ErrNoQuota) {
				t.Errorf("get after delete: %v", err)
			}
			if err := s.DeleteQuota(ctx, "q", 0); !errors.Is(err, store.ErrNoQuota) {
				t.Errorf("second delete: %v", err)
			}
		})
	}
}
