package gateway

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/authtest"
)

// TestOAuthGrantsInStore: two mcphost processes (here two hosts) keep one
// server's grant in one store, as replicas on one database do. The
// authorization server rotates refresh tokens: when one host refreshes,
// the other's refresh token is spent, and it takes the renewed grant from
// the store instead of asking for a login.
func TestOAuthGrantsInStore(t *testing.T) {
	as := authtest.New(t)
	// golang.org/x/oauth2 counts a token as expired 10 s early: 2 s here.
	as.SetAccessTokenLifetime(12 * time.Second)
	rs := newResource(t, as, "")
	db, err := store.Open(context.Background(), store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "m.db"), Key: bytes.Repeat([]byte{1}, store.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	g, err := db.Grants()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := startCodeHost(t, []upstream.ServerConfig{codeServer("p", rs)}, &Options{Grants: g})
	login(t, a, "p")
	b := startHost(t, Config{Servers: []upstream.ServerConfig{codeServer("p", rs)}}, &Options{Grants: g})
	if st := statusOf(b, "p"); st.State != upstream.StateConnected {
		t.Fatalf("b did not connect with the stored grant: %s %s", st.State, st.Error)
	}
	first := jtiOf(t, b, "p")

	time.Sleep(2500 * time.Millisecond) // both tokens expired for oauth2
	refreshes := as.TokenRequests("refresh_token")
	if got, isErr := call(t, a, "p__whoami"); isErr {
		t.Fatalf("a after expiry: %s", got)
	}
	if as.TokenRequests("refresh_token") != refreshes+1 {
		t.Fatalf("a did not refresh")
	}
	// b's refresh token was rotated away by a's refresh.
	if got, isErr := call(t, b, "p__whoami"); isErr {
		t.Fatalf("b after a's refresh: %s", got)
	}
	if jtiOf(t, b, "p") == first {
		t.Error("b still uses its expired token")
	}
	if n := as.Authorizations(); n != 1 {
		t.Errorf("%d logins, want 1: b asked for a login instead of taking the stored grant", n)
	}
}
