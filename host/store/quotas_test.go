package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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

// TestQuotaWindows: a window takes calls up to its limit, even from
// writers racing for the last one; a call given back makes room; expired
// windows are pruned.
func TestQuotaWindows(t *testing.T) {
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, o)
			const start, expires = int64(1_800_000_000_000_000_000), int64(1_800_000_060_000_000_000)
			var wg sync.WaitGroup
			var mu sync.Mutex
			took := 0
			for range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := s.TakeWindow(ctx, "q:1", "key:alice", start, expires, 5)
					if err != nil {
						t.Error(err)
					}
					if ok {
						mu.Lock()
						took++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if took != 5 {
				t.Fatalf("%d calls taken of a window of 5", took)
			}
			if ok, _ := s.TakeWindow(ctx, "q:1", "key:bob", start, expires, 5); !ok {
				t.Error("another budget's window was full")
			}
			if err := s.GiveBackWindow(ctx, "q:1", "key:alice", start); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.TakeWindow(ctx, "q:1", "key:alice", start, expires, 5); !ok || err != nil {
				t.Errorf("after a give-back: %v %v", ok, err)
			}
			if ok, _ := s.TakeWindow(ctx, "q:1", "key:alice", start, expires, 5); ok {
				t.Error("a sixth call taken")
			}
			if err := s.PruneWindows(ctx, time.Unix(0, expires+1)); err != nil {
				t.Fatal(err)
			}
			if ok, _ := s.TakeWindow(ctx, "q:1", "key:alice", start, expires, 1); !ok {
				t.Error("the pruned window still counted")
			}
		})
	}
}
