package store_test

import (
	"context"
	"testing"
)

// TestKV: tool plugins' key-value stores, one namespace per plugin, in
// either database.
func TestKV(t *testing.T) {
	ctx := context.Background()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
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
