package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/store"
)

func TestUsers(t *testing.T) {
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, o)
			rev0, err := s.UsersRevision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			serversRev, _ := s.Revision(ctx)
			k1 := store.UserKey{ID: "k1", Name: "laptop", SHA256: sha256.Sum256([]byte("alice-key-one"))}
			a, err := s.CreateUser(ctx, store.User{Subject: "alice", Groups: []string{"eng"}, Attributes: map[string]string{"team": "core"}, Keys: []store.UserKey{k1}})
			if err != nil {
				t.Fatal(err)
			}
			if a.Version != rev0+1 || len(a.Keys) != 1 || a.Keys[0].SHA256 != k1.SHA256 || a.Keys[0].Name != "laptop" || a.Created.IsZero() {
				t.Fatalf("created %+v, want version %d with key k1", a, rev0+1)
			}
			if _, err := s.CreateUser(ctx, store.User{Subject: "alice"}); !errors.Is(err, store.ErrUserExists) {
				t.Fatalf("second create: %v, want ErrUserExists", err)
			}
			if _, err := s.CreateUser(ctx, store.User{Subject: "bob"}); err != nil {
				t.Fatal(err)
			}
			// A user's change moves the users revision, not the servers'.
			if rev, _ := s.Revision(ctx); rev != serversRev {
				t.Fatalf("servers revision moved %d -> %d on a user change", serversRev, rev)
			}

			b, err := s.UpdateUser(ctx, "alice", func(u *store.User) error {
				u.Groups = append(u.Groups, "ops")
				u.Disabled = true
				return nil
			})
			if err != nil || !b.Disabled || !slices.Equal(b.Groups, []string{"eng", "ops"}) || b.Attributes["team"] != "core" || b.Version <= a.Version || len(b.Keys) != 1 {
				t.Fatalf("update: %+v %v", b, err)
			}
			if _, err := s.UpdateUser(ctx, "carol", func(*store.User) error { return nil }); !errors.Is(err, store.ErrNoUser) {
				t.Fatalf("update of nobody: %v, want ErrNoUser", err)
			}

			// Rotation: the new key in, the old one out, in one change.
			k2 := store.UserKey{ID: "k2", SHA256: sha256.Sum256([]byte("alice-key-two"))}
			c, err := s.AddUserKey(ctx, "alice", k2, "k1")
			if err != nil || len(c.Keys) != 1 || c.Keys[0].ID != "k2" || c.Version <= b.Version {
				t.Fatalf("rotate: %+v %v", c, err)
			}
			if _, err := s.AddUserKey(ctx, "alice", store.UserKey{ID: "k3", SHA256: sha256.Sum256([]byte("x"))}, "k1"); !errors.Is(err, store.ErrNoUserKey) {
				t.Fatalf("rotating a revoked key: %v, want ErrNoUserKey", err)
			}
			if got, _ := s.User(ctx, "alice"); len(got.Keys) != 1 {
				t.Fatalf("a refused rotation added its key: %+v", got.Keys)
			}
			if _, err := s.RevokeUserKey(ctx, "bob", "k2"); !errors.Is(err, store.ErrNoUserKey) {
				t.Fatalf("revoking another user's key: %v, want ErrNoUserKey", err)
			}
			list, rev, err := s.Users(ctx)
			if err != nil || len(list) != 2 || list[0].Subject != "alice" || list[1].Subject != "bob" || len(list[0].Keys) != 1 || len(list[1].Keys) != 0 {
				t.Fatalf("list %+v at %d, %v", list, rev, err)
			}
			if now, _ := s.UsersRevision(ctx); now != rev {
				t.Fatalf("Users read at %d, revision is %d", rev, now)
			}
			if _, err := s.RevokeUserKey(ctx, "alice", "k2"); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.User(ctx, "alice"); len(got.Keys) != 0 {
				t.Fatalf("after revoke: %+v", got.Keys)
			}
			if err := s.DeleteUser(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.User(ctx, "alice"); !errors.Is(err, store.ErrNoUser) {
				t.Fatalf("after delete: %v", err)
			}
			if err := s.DeleteUser(ctx, "alice"); !errors.Is(err, store.ErrNoUser) {
				t.Fatalf("second delete: %v", err)
			}
		})
	}
}

// TestUserKeysAreHashesAtRest reads the table as the database has it: no
// key, only its SHA-256; and a key deleted with its user does not come
// back with a user of the same subject.
func TestUserKeysAreHashesAtRest(t *testing.T) {
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, o)
			const key = "mcph_plaintext-key-0123456789"
			if _, err := s.CreateUser(ctx, store.User{Subject: "dana", Keys: []store.UserKey{{ID: "d1", SHA256: sha256.Sum256([]byte(key))}}}); err != nil {
				t.Fatal(err)
			}
			var digest string
			if err := rawDB(t, o).QueryRow(`SELECT sha256 FROM mcphost_user_keys WHERE id = 'd1'`).Scan(&digest); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(digest, "plaintext") || len(digest) != 64 {
				t.Fatalf("key at rest: %q", digest)
			}
			if err := s.DeleteUser(ctx, "dana"); err != nil {
				t.Fatal(err)
			}
			again, err := s.CreateUser(ctx, store.User{Subject: "dana"})
			if err != nil || len(again.Keys) != 0 {
				t.Fatalf("recreated user: %+v %v", again, err)
			}
		})
	}
}

// TestUsersRevisionSeenByAnotherStore is the signal replicas follow: a
// second Store on the same database (another process's) sees the revision
// move and reads the change.
func TestUsersRevisionSeenByAnotherStore(t *testing.T) {
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a, b := open(t, o), open(t, o)
			before, err := b.UsersRevision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.CreateUser(ctx, store.User{Subject: "erin", Keys: []store.UserKey{{ID: "e1", SHA256: sha256.Sum256([]byte("erin-key"))}}}); err != nil {
				t.Fatal(err)
			}
			after, err := b.UsersRevision(ctx)
			if err != nil || after == before {
				t.Fatalf("revision seen by the other store: %d -> %d, %v", before, after, err)
			}
			if _, err := a.RevokeUserKey(ctx, "erin", "e1"); err != nil {
				t.Fatal(err)
			}
			list, rev, err := b.Users(ctx)
			if err != nil || rev <= after || len(list) != 1 || len(list[0].Keys) != 0 {
				t.Fatalf("after a revoke elsewhere: %+v at %d, %v", list, rev, err)
			}
		})
	}
}
