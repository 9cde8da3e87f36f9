package auth_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/auth"
)

func TestStoredUsers(t *testing.T) {
	users := &auth.Users{}
	admin := auth.KeyFromValue("op", "operator-key-0123456789")
	admin.Subject, admin.Groups = "operator", []string{"admins"}
	a, err := auth.New(auth.Config{Keys: []auth.Key{admin}, AdminGroups: []string{"admins"}, Users: users}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const key = "mcph_alice-key-0123456789"
	if _, f := a.Authenticate(ctx, "Bearer "+key); f == nil || f.Status != http.StatusForbidden {
		t.Fatalf("a key before it is stored: %+v", f)
	}

	// Set applies to the Authenticator built before it.
	alice := auth.User{Subject: "alice", Groups: []string{"eng", "admins"}, Attributes: map[string]string{"team": "core"},
		Keys: []auth.UserKey{{ID: "k1", SHA256: sha256.Sum256([]byte(key))}}}
	users.Set([]auth.User{alice})
	id, f := a.Authenticate(ctx, "Bearer "+key)
	if f != nil || id.Subject != "alice" || id.Method != abi.AuthKey || id.StoredKey() != "k1" || id.Attributes["team"] != "core" {
		t.Fatalf("stored key: %+v %+v", id, f)
	}
	if a.IsAdmin(id) {
		t.Fatal("a stored user in an admin group is an administrator")
	}
	if op, f := a.Authenticate(ctx, "Bearer operator-key-0123456789"); f != nil || !a.IsAdmin(op) || op.StoredKey() != "" {
		t.Fatalf("the config file's key beside the stored ones: %+v %+v", op, f)
	}
	if !users.Accepts(id) {
		t.Fatal("Accepts refuses the identity the set just gave")
	}

	// New groups: the old identity is no longer the user's.
	changed := alice
	changed.Groups = []string{"eng"}
	users.Set([]auth.User{changed})
	if users.Accepts(id) {
		t.Fatal("Accepts an identity whose groups changed")
	}

	// Disabled: the key is refused, and says why.
	changed.Disabled = true
	users.Set([]auth.User{changed})
	if _, f := a.Authenticate(ctx, "Bearer "+key); f == nil || f.Status != http.StatusForbidden {
		t.Fatalf("a disabled user's key: %+v", f)
	}
	if users.Accepts(id) {
		t.Fatal("Accepts a disabled user's identity")
	}

	// Revoked: gone.
	users.Set([]auth.User{{Subject: "alice"}})
	if _, f := a.Authenticate(ctx, "Bearer "+key); f == nil {
		t.Fatal("a revoked key authenticates")
	}
	if !users.Accepts(&auth.Identity{Subject: "alice", Method: abi.AuthKey}) {
		t.Fatal("Accepts judges an identity of no stored key")
	}
}
