package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/store"
)

// TestCallerSecrets: a caller's secrets are stored sealed (the row holds
// no plain value), listed without values, read one caller at a time,
// bound to their (subject, name), and each change moves their revision
// alone.
func TestCallerSecrets(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, testKey) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t, o)
			rev0, err := s.CallerSecretsRevision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			usersRev, _ := s.UsersRevision(ctx)
			const value = "ghp_alice-own-token-1234"
			a, err := s.SetCallerSecret(ctx, "alice", "GITHUB_TOKEN", []byte(value))
			if err != nil || a.Version != rev0+1 || a.Updated.IsZero() {
				t.Fatalf("set: %+v %v", a, err)
			}
			if _, err := s.SetCallerSecret(ctx, "bob", "GITHUB_TOKEN", []byte("bob-token")); err != nil {
				t.Fatal(err)
			}
			if rev, _ := s.UsersRevision(ctx); rev != usersRev {
				t.Fatalf("users revision moved %d -> %d on a secret change", usersRev, rev)
			}
			var sealed string
			if err := rawDB(t, o).QueryRowContext(ctx, `SELECT sealed FROM mcphost_caller_secrets WHERE subject = 'alice'`).Scan(&sealed); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(sealed, value) || strings.Contains(sealed, "alice-own") {
				t.Fatalf("the row holds the value in the clear: %q", sealed)
			}

			got, err := s.CallerSecretValues(ctx, "alice", []string{"GITHUB_TOKEN", "OTHER"})
			if err != nil || len(got) != 1 || string(got["GITHUB_TOKEN"].Value) != value || got["GITHUB_TOKEN"].Version != a.Version {
				t.Fatalf("values of alice: %v %v", got, err)
			}
			list, rev, err := s.CallerSecrets(ctx, "")
			if err != nil || len(list) != 2 || list[0].Subject != "alice" || list[1].Subject != "bob" || rev != rev0+2 {
				t.Fatalf("list: %+v at %d, %v", list, rev, err)
			}
			mine, _, err := s.CallerSecrets(ctx, "bob")
			if err != nil || len(mine) != 1 || mine[0].Name != "GITHUB_TOKEN" {
				t.Fatalf("bob's list: %+v %v", mine, err)
			}

			// Alice's sealed value on bob's row does not open there.
			if _, err := rawDB(t, o).ExecContext(ctx, `UPDATE mcphost_caller_secrets SET sealed = (SELECT sealed FROM mcphost_caller_secrets WHERE subject = 'alice') WHERE subject = 'bob'`); err != nil {
				t.Fatal(err)
			}
			if v, err := s.CallerSecretValues(ctx, "bob", []string{"GITHUB_TOKEN"}); err == nil || strings.Contains(err.Error(), value) {
				t.Fatalf("alice's secret copied to bob's row opened: %v %v", v, err)
			}

			if err := s.DeleteCallerSecret(ctx, "alice", "GITHUB_TOKEN"); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteCallerSecret(ctx, "alice", "GITHUB_TOKEN"); !errors.Is(err, store.ErrNoCallerSecret) {
				t.Fatalf("second delete: %v, want ErrNoCallerSecret", err)
			}
			if got, err := s.CallerSecretValues(ctx, "alice", []string{"GITHUB_TOKEN"}); err != nil || len(got) != 0 {
				t.Fatalf("after delete: %v %v", got, err)
			}
			if rev, _ := s.CallerSecretsRevision(ctx); rev != rev0+3 { // the refused delete changed nothing
				t.Fatalf("revision %d after three changes from %d", rev, rev0)
			}
		})
	}
}

// TestCallerSecretsNeedAKey: without a store key nothing is stored.
func TestCallerSecretsNeedAKey(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t, o)
			if _, err := s.SetCallerSecret(context.Background(), "alice", "T", []byte("v")); !errors.Is(err, store.ErrNoKey) {
				t.Fatalf("set without a key: %v, want ErrNoKey", err)
			}
		})
	}
}
