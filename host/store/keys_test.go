package store_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mcphost-project/mcphost/host/store"
)

// TestSharedKey: two stores on one database (two replicas) asking for a
// shared key at once get the same one, and another name another; with a
// store key it is sealed at rest (the row is not the key), and a store
// opened without that key cannot read it.
func TestSharedKey(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := open(t, o), open(t, o)
			var ka, kb []byte
			var ea, eb error
			var wg sync.WaitGroup
			wg.Go(func() { ka, ea = a.SharedKey(ctx, "round-state") })
			wg.Go(func() { kb, eb = b.SharedKey(ctx, "round-state") })
			wg.Wait()
			if ea != nil || eb != nil || len(ka) != store.SharedKeySize || !bytes.Equal(ka, kb) {
				t.Fatalf("replicas got %x (%v) and %x (%v)", ka, ea, kb, eb)
			}
			again, err := a.SharedKey(ctx, "round-state")
			if err != nil || !bytes.Equal(again, ka) {
				t.Errorf("asked again: %x %v", again, err)
			}
			if other, err := a.SharedKey(ctx, "other"); err != nil || bytes.Equal(other, ka) {
				t.Errorf("another name: %x %v", other, err)
			}
			var v string
			if err := rawDB(t, o).QueryRowContext(ctx, `SELECT value FROM mcphost_keys WHERE name = 'round-state'`).Scan(&v); err != nil || !strings.HasPrefix(v, "v1:") {
				t.Errorf("stored as %q (%v), want sealed", v, err)
			}
			o2 := o
			o2.Key = nil
			if _, err := open(t, o2).SharedKey(ctx, "round-state"); err == nil {
				t.Error("a store without the key read a sealed shared key")
			}
			// The store key changed: the old shared key is replaced, so
			// that the process starts (what it sealed lived minutes).
			o3 := o
			o3.Key = bytes.Repeat([]byte{8}, len(testKey))
			k3, err := open(t, o3).SharedKey(ctx, "round-state")
			if err != nil || len(k3) != store.SharedKeySize || bytes.Equal(k3, ka) {
				t.Errorf("with another store key: %x %v, want a new key", k3, err)
			}
			if k, err := open(t, o3).SharedKey(ctx, "round-state"); err != nil || !bytes.Equal(k, k3) {
				t.Errorf("asked again with that key: %x %v, want %x", k, err, k3)
			}
		})
	}
}
