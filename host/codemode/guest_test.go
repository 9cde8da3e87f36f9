package codemode

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuestVersion: the embedded guest is the one quickjs.version
// records; with MCPHOST_QUICKJS_SRC (a QuickJS checkout at the recorded
// commit) and Debian's clang for wasm32-wasi, build.sh rebuilds it byte
// for byte, so glue.c and build.sh cannot drift from what runs.
func TestGuestVersion(t *testing.T) {
	v, err := os.ReadFile("guest/quickjs.version")
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, line := range strings.Split(string(v), "\n") {
		if s, ok := strings.CutPrefix(line, "sha256 "); ok {
			want = s
		}
	}
	sum := sha256.Sum256(guestWasm)
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("guest/quickjs.wasm has sha256 %s; quickjs.version says %s: rebuild it with guest/build.sh and record its sum", got, want)
	}
	src := os.Getenv("MCPHOST_QUICKJS_SRC")
	if src == "" {
		t.Skip("MCPHOST_QUICKJS_SRC not set: not rebuilding the guest")
	}
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("no clang: not rebuilding the guest")
	}
	dir := t.TempDir()
	for _, f := range []string{"build.sh", "glue.c", "quickjs.version"} {
		b, err := os.ReadFile(filepath.Join("guest", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("sh", filepath.Join(dir, "build.sh"), src).CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "quickjs.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(b) != sum {
		t.Fatal("build.sh built a different guest from the committed one: commit the rebuilt quickjs.wasm and its sum")
	}
}
