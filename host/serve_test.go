package host

import (
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

func FuzzOriginAllowed(f *testing.F) {
	for _, s := range []string{"http://localhost:1", "null", "https://evil.example", "http://127.0.0.1:7700", "file://", "http://[::1]:3"} {
		f.Add(s, "127.0.0.1:7700", true)
	}
	f.Fuzz(func(t *testing.T, origin, host string, local bool) {
		if originAllowed(origin, host, local) && !local && !strings.Contains(strings.ToLower(origin), strings.ToLower(host)) {
			t.Fatalf("originAllowed(%q, %q, false) for another host", origin, host)
		}
	})
}
