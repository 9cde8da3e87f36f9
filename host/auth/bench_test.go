package auth

import (
	"context"
	"testing"

	"github.com/mcphost-project/mcphost/internal/authtest"
)

// BenchmarkAuthenticate is the cost a request pays for its credential, the
// issuer's key set cached: an OAuth access token (RS256 and ES256), and an
// API key among 100.
func BenchmarkAuthenticate(b *testing.B) {
	as := authtest.New(b)
	a := newTestAuth(b, as)
	ctx := context.Background()
	rs := "Bearer " + as.Token(b, "alice", testAudience, nil)
	if _, f := a.Authenticate(ctx, rs); f != nil {
		b.Fatal(f)
	}
	b.Run("oauth-RS256-first-sight", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.oa.seen = nil // every token new: the signature is checked
			if _, f := a.Authenticate(ctx, rs); f != nil {
				b.Fatal(f)
			}
		}
	})
	b.Run("oauth-RS256-seen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, f := a.Authenticate(ctx, rs); f != nil {
				b.Fatal(f)
			}
		}
	})
	keys := make([]Key, 100)
	for i := range keys {
		keys[i] = KeyFromValue("k", "key-number-"+string(rune('a'+i%26))+string(rune('a'+i/26))+"-0123456789")
		keys[i].Subject = "s"
	}
	ka, err := New(Config{Keys: keys}, nil)
	if err != nil {
		b.Fatal(err)
	}
	last := "Bearer key-number-" + string(rune('a'+99%26)) + string(rune('a'+99/26)) + "-0123456789"
	b.Run("key-of-100", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, f := ka.Authenticate(ctx, last); f != nil {
				b.Fatal(f)
			}
		}
	})
}
