package grants_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcphost-project/mcphost/host/grants"
)

func grant(server, subject, access string) *grants.Grant {
	return grants.New(server, subject, &oauth2.Config{ClientID: "c", Endpoint: oauth2.Endpoint{AuthURL: "https://as/a", TokenURL: "https://as/t"}, Scopes: []string{"read"}},
		&oauth2.Token{AccessToken: access, RefreshToken: "r-" + access, Expiry: time.Now().Add(time.Hour)})
}

func TestFileStore(t *testing.T) {
	t.Parallel()
	for _, key := range [][]byte{nil, bytes.Repeat([]byte{1}, 32)} {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "sub", "grants.json")
		f, err := grants.NewFile(path, key)
		if err != nil {
			t.Fatal(err)
		}
		if g, err := f.Get(ctx, "gh", ""); g != nil || err != nil {
			t.Fatalf("empty store: %v %v", g, err)
		}
		for _, g := range []*grants.Grant{grant("gh", "", "tok-shared"), grant("gh", "alice", "tok-alice"), grant("gh", "bob", "tok-bob")} {
			if err := f.Put(ctx, g); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Put(ctx, grant("gh", "alice", "tok-alice-2")); err != nil {
			t.Fatal(err)
		}
		g, err := f.Get(ctx, "gh", "alice")
		if err != nil || g.AccessToken != "tok-alice-2" || g.Config().Endpoint.TokenURL != "https://as/t" || g.Token().RefreshToken != "r-tok-alice-2" {
			t.Fatalf("alice: %+v %v", g, err)
		}
		if err := f.Delete(ctx, "gh", "bob"); err != nil {
			t.Fatal(err)
		}
		list, _ := f.List(ctx)
		if len(list) != 2 {
			t.Fatalf("%d grants", len(list))
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v %v", st.Mode(), err)
		}
		raw, _ := os.ReadFile(path)
		if key != nil && strings.Contains(string(raw), "tok-") {
			t.Fatalf("a sealed file holds a token: %s", raw)
		}
		if key != nil {
			wrong, _ := grants.NewFile(path, bytes.Repeat([]byte{2}, 32))
			if _, err := wrong.List(ctx); err == nil || !strings.Contains(err.Error(), "do not open") {
				t.Fatalf("wrong key: %v", err)
			}
			none, _ := grants.NewFile(path, nil)
			if _, err := none.List(ctx); err == nil || !strings.Contains(err.Error(), "sealed") {
				t.Fatalf("no key: %v", err)
			}
		}
		if d := grants.Describe(*g); strings.Contains(d, "tok-") || !strings.Contains(d, "gh for alice") {
			t.Fatalf("describe: %s", d)
		}
	}
}

func TestFileStoreRefusesDamage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "g.json")
	for _, body := range []string{"{", `{"version":2}`, `{"version":1,"sealed":"!!"}`} {
		os.WriteFile(path, []byte(body), 0o600)
		f, _ := grants.NewFile(path, bytes.Repeat([]byte{1}, 32))
		if _, err := f.List(context.Background()); err == nil {
			t.Fatalf("%q read", body)
		}
	}
}
