package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcphost-project/mcphost/host/grants"
	"github.com/mcphost-project/mcphost/host/store"
)

// TestGrants: OAuth grants by (server, subject) on every driver, sealed
// at rest, shared by two stores on one database (two replicas), and not
// opened by another key.
func TestGrants(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := open(t, o), open(t, o)
			ga, err := a.Grants()
			if err != nil {
				t.Fatal(err)
			}
			gb, _ := b.Grants()
			cfg := &oauth2.Config{ClientID: "c", Endpoint: oauth2.Endpoint{TokenURL: "https://as.example/token"}}
			alice := grants.New("gh", "key:alice", cfg, &oauth2.Token{AccessToken: "at-alice-secret", RefreshToken: "rt-alice", Expiry: time.Now().Add(time.Hour)})
			if err := ga.Put(ctx, alice); err != nil {
				t.Fatal(err)
			}
			if err := ga.Put(ctx, grants.New("gh", "", cfg, &oauth2.Token{AccessToken: "at-gateway"})); err != nil {
				t.Fatal(err)
			}
			// The other replica reads it; a second Put replaces it.
			got, err := gb.Get(ctx, "gh", "key:alice")
			if err != nil || got == nil || got.AccessToken != "at-alice-secret" || got.RefreshToken != "rt-alice" || got.ClientID != "c" {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			alice.AccessToken = "at-alice-2"
			if err := gb.Put(ctx, alice); err != nil {
				t.Fatal(err)
			}
			if got, _ := ga.Get(ctx, "gh", "key:alice"); got == nil || got.AccessToken != "at-alice-2" {
				t.Fatalf("after the replacement: %+v", got)
			}
			if got, err := ga.Get(ctx, "gh", "key:bob"); got != nil || err != nil {
				t.Fatalf("bob's grant = %+v, %v", got, err)
			}
			list, err := ga.List(ctx)
			if err != nil || len(list) != 2 || list[0].Subject != "" || list[1].Subject != "key:alice" {
				t.Fatalf("List = %+v, %v", list, err)
			}
			// Sealed at rest: no token in the database's bytes.
			if o.Driver == store.SQLite {
				raw := readFile(t, o.DSN)
				if bytes.Contains(raw, []byte("at-alice")) || bytes.Contains(raw, []byte("rt-alice")) {
					t.Error("a token is in the clear in the SQLite file")
				}
			}
			if err := ga.Delete(ctx, "gh", "key:alice"); err != nil {
				t.Fatal(err)
			}
			if got, _ := gb.Get(ctx, "gh", "key:alice"); got != nil {
				t.Fatalf("deleted, still %+v", got)
			}

			// Another key opens nothing, and says why.
			o2 := o
			o2.Key = bytes.Repeat([]byte{9}, store.KeySize)
			g2, _ := open(t, o2).Grants()
			if _, err := g2.Get(ctx, "gh", ""); err == nil || !strings.Contains(err.Error(), "key") {
				t.Errorf("Get with another key: %v", err)
			}
			if list, err := g2.List(ctx); len(list) != 0 || err == nil {
				t.Errorf("List with another key = %+v, %v", list, err)
			}
		})
	}
}

// TestGrantsNeedKey: no key, no grants in the store.
func TestGrantsNeedKey(t *testing.T) {
	t.Parallel()
	s := open(t, store.Options{Driver: store.SQLite, DSN: t.TempDir() + "/m.db"})
	if _, err := s.Grants(); err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("Grants without a key: %v", err)
	}
}

// readFile reads an SQLite database with its write-ahead log, where fresh
// rows are until a checkpoint.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}
