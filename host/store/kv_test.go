package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mcphost-project/mcphost/host/store"
)

// TestKV: tool plugins' key-value stores, one namespace per plugin, in
// either database.
func TestKV(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t, o)
			if _, ok, err := s.KVGet(ctx, "qr", "k"); ok || err != nil {
				t.Fatalf("empty store: %v %v", ok, err)
			}
			for _, v := range []string{"one", "two", ""} {
				if err := s.KVSet(ctx, "qr", "k", []byte(v)); err != nil {
					t.Fatal(err)
				}
				if got, ok, err := s.KVGet(ctx, "qr", "k"); !ok || err != nil || string(got) != v {
					t.Fatalf("after setting %q: %q %v %v", v, got, ok, err)
				}
			}
			if err := s.KVSet(ctx, "other", "k", []byte{0, 255}); err != nil {
				t.Fatal(err)
			}
			if got, _, _ := s.KVGet(ctx, "qr", "k"); string(got) != "" {
				t.Errorf("namespaces mix: %q", got)
			}
			if got, ok, _ := s.KVGet(ctx, "other", "k"); !ok || len(got) != 2 || got[1] != 255 {
				t.Errorf("binary value: %v", got)
			}
			if err := s.KVDelete(ctx, "qr", "k"); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := s.KVGet(ctx, "qr", "k"); ok {
				t.Error("deleted key still there")
			}
		})
	}
}

// TestKVLimit: a plugin's store in the database holds to its limit as the
// memory store does: a write past it fails and changes nothing, a write
// that shrinks always goes through, and deletes give the room back. Other
// plugins' namespaces count apart.
func TestKVLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o.KVLimit = 100
			s := open(t, o)
			set := func(key string, n int) error { return s.KVSet(ctx, "qr", key, bytes.Repeat([]byte{'x'}, n)) }
			if err := set("a", 59); err != nil { // 60 bytes with its key
				t.Fatal(err)
			}
			if err := set("b", 40); !errors.Is(err, store.ErrKVFull) {
				t.Fatalf("a write past the limit: %v, want ErrKVFull", err)
			}
			if _, ok, _ := s.KVGet(ctx, "qr", "b"); ok {
				t.Error("a refused write was kept")
			}
			if err := set("b", 39); err != nil { // exactly 100
				t.Fatal(err)
			}
			if err := set("a", 10); err != nil {
				t.Fatalf("a write that shrinks: %v", err)
			}
			if err := s.KVSet(ctx, "other", "k", bytes.Repeat([]byte{'y'}, 90)); err != nil {
				t.Fatalf("another plugin's namespace: %v", err)
			}
			if err := s.KVDelete(ctx, "qr", "b"); err != nil {
				t.Fatal(err)
			}
			if err := set("c", 80); err != nil {
				t.Fatalf("after a delete gave room back: %v", err)
			}
		})
	}
}

// TestKVLimitConcurrentWriters: writers racing on one plugin's store (as
// replicas do on one PostgreSQL) cannot pass the limit together.
func TestKVLimitConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o.KVLimit = 1000
			a, b := open(t, o), open(t, o)
			var wg sync.WaitGroup
			for i, s := range []*store.Store{a, b, a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range 10 {
						_ = s.KVSet(ctx, "qr", fmt.Sprintf("k%d-%d", i, j), bytes.Repeat([]byte{'x'}, 46)) // 50 bytes a key
					}
				}()
			}
			wg.Wait()
			n := 0
			for i := range 4 {
				for j := range 10 {
					if _, ok, _ := a.KVGet(ctx, "qr", fmt.Sprintf("k%d-%d", i, j)); ok {
						n++
					}
				}
			}
			if n != 20 {
				t.Errorf("%d keys of 50 bytes kept under a limit of 1000 bytes, want 20", n)
			}
		})
	}
}
