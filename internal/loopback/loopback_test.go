package loopback

import "testing"

func TestIs(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"localhost": true, "localhost:7700": true, "127.0.0.1": true, "127.0.0.2:1": true, "[::1]:80": true, "::1": true,
		"[::ffff:127.0.0.1]:80": true, "example.com": false, "10.0.0.1:80": false, "": false, "localhost.example": false,
	} {
		if got := Is(addr); got != want {
			t.Errorf("Is(%q) = %v, want %v", addr, got, want)
		}
	}
}
