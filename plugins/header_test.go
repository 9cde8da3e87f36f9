package plugins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		head, want string // want "" for ok
	}{
		{"\x00asm\x01\x00\x00\x00", ""},
		{"\x00asm\x01\x00\x00\x00\x01\x02", ""},
		{"", "the file is empty"},
		{"#!/bin/sh\necho", `it starts with "#!/bin/s"`},
		{"\x00asm\x0d\x00\x01\x00", "version 0d000100"},
		{"\x00asm", "version "},
		{"\x7fELF\x02\x01\x01", `it starts with "\x7fELF`},
	} {
		err := CheckHeader([]byte(tc.head))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.head, err)
			}
			continue
		}
		if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want ErrCompile saying %q", tc.head, err, tc.want)
		}
	}
}

// TestCheckRefusesNonWasm: Check, which validate runs, refuses a file that
// is not WebAssembly and one that does not compile, and runs no guest.
func TestCheckRefusesNonWasm(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	dir := t.TempDir()
	for name, body := range map[string]string{
		"text.wasm":    "hello",
		"corrupt.wasm": "\x00asm\x01\x00\x00\x00\x01\xff\xff\xff\xff\x0f",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Check(context.Background(), rt, Spec{Name: "p", Source: p}); !errors.Is(err, ErrCompile) {
			t.Errorf("%s: %v, want ErrCompile", name, err)
		}
	}
}

func FuzzCheckHeader(f *testing.F) {
	for _, s := range []string{"", "\x00asm", "\x00asm\x01\x00\x00\x00", "MZ\x90\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		err := CheckHeader(head)
		ok := len(head) >= 8 && string(head[:8]) == "\x00asm\x01\x00\x00\x00"
		if (err == nil) != ok {
			t.Fatalf("CheckHeader(%q) = %v", head, err)
		}
	})
}
