package filters_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/filters/internal/wasmbuild"
)

// TestBuiltinReproducible rebuilds the module from the sources and checks
// that the committed builtin.wasm (what the binary embeds) is the same,
// byte for byte. Different Go releases compile differently, so it skips
// when the go on PATH is not the release recorded in
// builtin.wasm.go-version.
func TestBuiltinReproducible(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH to rebuild builtin.wasm with")
	}
	ctx := context.Background()
	recorded, err := os.ReadFile("builtin.wasm.go-version")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(recorded))
	have, err := wasmbuild.GoVersion(ctx, ".")
	if err != nil {
		t.Fatal(err)
	}
	if have != want {
		t.Skipf("builtin.wasm was built with %s and this go is %s: different releases give different bytes, so it cannot be compared", want, have)
	}
	out := filepath.Join(t.TempDir(), "builtin.wasm")
	if err := wasmbuild.Build(ctx, ".", out); err != nil {
		t.Fatal(err)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("builtin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, committed) {
		t.Fatalf("builtin.wasm (%d bytes) is not what its sources build (%d bytes): run go generate ./filters and commit the result", len(committed), len(built))
	}
	if !bytes.Equal(committed, filters.Module()) {
		t.Fatal("the embedded module differs from builtin.wasm: rebuild the test binary")
	}
}
