package auth

import (
	"encoding/json"
	"strings"
	"testing"
)

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer x", "bearer  x", "Basic x", "Bearer", "", "BeArEr \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, ok := bearerToken(h)
		if !ok {
			return
		}
		if tok == "" || !strings.HasSuffix(h, tok) || !strings.EqualFold(h[:6], "bearer") {
			t.Fatalf("bearerToken(%q) = %q", h, tok)
		}
	})
}

// FuzzClaims: the claim readers take any JSON a token may carry.
func FuzzClaims(f *testing.F) {
	for _, s := range []string{`{"scope":"a b"}`, `{"scp":["a",1,null]}`, `{"groups":"x y","team":3}`, `{"groups":[{"a":1}]}`, `{}`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var claims map[string]any
		if json.Unmarshal([]byte(doc), &claims) != nil {
			return
		}
		for _, s := range tokenScopes(claims) {
			if s == "" || strings.ContainsAny(s, " \t\n") {
				t.Fatalf("scope %q from %s", s, doc)
			}
		}
		for _, v := range claims {
			for _, s := range claimStrings(v) {
				if s == "" {
					t.Fatalf("empty string from %s", doc)
				}
			}
			_, _ = claimString(v)
		}
	})
}

// FuzzParseSHA256 never accepts what is not 32 bytes of hex.
func FuzzParseSHA256(f *testing.F) {
	f.Add("sha256:" + strings.Repeat("ab", 32))
	f.Add(strings.Repeat("0", 63))
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseSHA256(s)
		if err == nil && len(strings.TrimPrefix(strings.TrimSpace(s), "sha256:")) != 64 {
			t.Fatalf("accepted %q as %x", s, d)
		}
	})
}

// TestKeyBindsRights: identities that differ in groups or attributes have
// different keys, whatever the order they were listed in.
func TestKeyBindsRights(t *testing.T) {
	t.Parallel()
	base := &Identity{Method: "key", Subject: "alice", Groups: []string{"eng", "admins"}, Attributes: map[string]string{"team": "core"}}
	same := &Identity{Method: "key", Subject: "alice", Groups: []string{"admins", "eng"}, Attributes: map[string]string{"team": "core"}}
	if base.Key() != same.Key() {
		t.Error("the order of groups changes the key")
	}
	for _, other := range []*Identity{
		{Method: "key", Subject: "alice", Groups: []string{"eng"}, Attributes: map[string]string{"team": "core"}},
		{Method: "key", Subject: "alice", Groups: []string{"eng", "admins"}},
		{Method: "oauth", Subject: "alice", Groups: []string{"eng", "admins"}, Attributes: map[string]string{"team": "core"}},
		{Method: "key", Subject: "alice", Groups: []string{"eng,admins"}, Attributes: map[string]string{"team": "core"}},
	} {
		if other.Key() == base.Key() {
			t.Errorf("%+v has the key of %+v", other, base)
		}
	}
}
