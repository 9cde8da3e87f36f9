package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestBuiltinDigestReuse checks that a builtin's digest is reused only for
// the very same bytes: a resolver that returns new bytes under the same
// name gets them hashed.
func TestBuiltinDigestReuse(t *testing.T) {
	t.Parallel()
	modules := map[string][]byte{"p": []byte("first module")}
	rt := newRuntime(t, RuntimeOptions{Builtin: func(name string) ([]byte, map[string]string, bool) {
		b, ok := modules[name]
		return b, nil, ok
	}})
	want := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	resolve := func() string {
		t.Helper()
		src, err := rt.resolve(Spec{Name: "p", Source: "builtin:p"})
		if err != nil {
			t.Fatal(err)
		}
		return src.sha
	}
	if got := resolve(); got != want(modules["p"]) {
		t.Fatalf("first digest %s", got)
	}
	if got := resolve(); got != want(modules["p"]) {
		t.Fatalf("reused digest %s", got)
	}
	modules["p"] = []byte("second module, other bytes")
	if got := resolve(); got != want(modules["p"]) {
		t.Fatalf("digest after the bytes changed: %s, want %s", got, want(modules["p"]))
	}
	if _, err := rt.resolve(Spec{Name: "p", Source: "builtin:p", SHA256: want([]byte("first module"))}); err == nil {
		t.Fatal("a pinned digest of the old bytes was accepted for the new ones")
	}
}
