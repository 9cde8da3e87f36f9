package listener

import (
	"strings"
	"testing"
)

func FuzzOriginAllowed(f *testing.F) {
	for _, s := range []string{"http://localhost:1", "null", "https://evil.example", "http://127.0.0.1:7700", "file://", "http://[::1]:3"} {
		f.Add(s, "127.0.0.1:7700", true)
	}
	f.Fuzz(func(t *testing.T, origin, host string, local bool) {
		if originAllowed(origin, host, local, nil) && !local && !strings.Contains(strings.ToLower(origin), strings.ToLower(host)) {
			t.Fatalf("originAllowed(%q, %q, false) for another host", origin, host)
		}
	})
}

func FuzzParseOrigin(f *testing.F) {
	for _, s := range []string{"https://App.Example.com:443", "http://[::1]:80", "https://a.example/", "https://a.example/x", "null", "http://u@h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		norm, err := ParseOrigin(origin)
		if err != nil {
			return
		}
		again, err := ParseOrigin(norm)
		if err != nil || again != norm {
			t.Fatalf("ParseOrigin(%q) = %q, which parses to %q, %v", origin, norm, again, err)
		}
	})
}

func TestAllowedOrigins(t *testing.T) {
	t.Parallel()
	extra := map[string]bool{}
	for _, o := range []string{"https://App.example.com:443", "http://tools.internal:8080"} {
		norm, err := ParseOrigin(o)
		if err != nil {
			t.Fatal(err)
		}
		extra[norm] = true
	}
	for _, c := range []struct {
		origin, host string
		local, want  bool
	}{
		{"https://app.example.com", "mcp.example.com", false, true},
		{"https://APP.example.com:443", "mcp.example.com", false, true},
		{"http://app.example.com", "mcp.example.com", false, false}, // another scheme is another origin
		{"http://tools.internal:8080", "mcp.example.com", false, true},
		{"http://tools.internal:8081", "mcp.example.com", false, false},
		{"https://evil.example", "mcp.example.com", false, false},
		{"https://mcp.example.com", "mcp.example.com", false, true}, // the request's own host
		{"http://localhost:5173", "127.0.0.1:7700", true, true},     // loopback on loopback, as before
		{"http://localhost:5173", "mcp.example.com", false, false},
		{"null", "mcp.example.com", false, false},
	} {
		if got := originAllowed(c.origin, c.host, c.local, extra); got != c.want {
			t.Errorf("originAllowed(%q, host %q, local %v) = %v, want %v", c.origin, c.host, c.local, got, c.want)
		}
	}
	for _, bad := range []string{"app.example.com", "https://app.example.com/path", "ftp://x", "https://u:p@x", "https://x?q=1", ""} {
		if _, err := ParseOrigin(bad); err == nil {
			t.Errorf("ParseOrigin(%q) accepted it", bad)
		}
	}
}
