package seal

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	s, err := New(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.Seal([]byte("ghp_secret"), "gh")
	if err != nil || strings.Contains(sealed, "ghp_secret") || !strings.HasPrefix(sealed, "v1:") {
		t.Fatalf("%q %v", sealed, err)
	}
	if plain, err := s.Open(sealed, "gh"); err != nil || string(plain) != "ghp_secret" {
		t.Fatalf("%q %v", plain, err)
	}
	if _, err := s.Open(sealed, "other"); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("other aad: %v", err)
	}
	other, _ := New(bytes.Repeat([]byte{2}, KeySize))
	if _, err := other.Open(sealed, "gh"); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("other key: %v", err)
	}
	for in, want := range map[string]error{"x": ErrFormat, "v1:!!": ErrDamaged, "v1:AAAA": ErrDamaged} {
		if _, err := s.Open(in, "gh"); !errors.Is(err, want) {
			t.Fatalf("%q: %v, want %v", in, err, want)
		}
	}
	if s, err := New(nil); s != nil || err != nil {
		t.Fatal("a nil key makes no sealer")
	}
	if _, err := New([]byte("short")); err == nil || !strings.Contains(err.Error(), "must be 32") {
		t.Fatalf("short key: %v", err)
	}
}
