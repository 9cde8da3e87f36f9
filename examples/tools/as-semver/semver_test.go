package assemver_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/internal/tooltest"
)

// TestSemverThroughMcphost serves the committed semver.wasm with mcphost
// over HTTP and calls its tools as a client would.
func TestSemverThroughMcphost(t *testing.T) {
	t.Parallel()
	wasm, err := filepath.Abs("semver.wasm")
	if err != nil {
		t.Fatal(err)
	}
	r := tooltest.Serve(t, t.TempDir(), fmt.Sprintf("tools_plugin \"semver\" {\n  source = %q\n  timeout = \"1s\"\n  memory = \"16MiB\"\n}\n", wasm))
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"semver_compare", map[string]any{"a": "1.2.3", "b": "1.10.0"}, `{"order":-1,"greater":"1.10.0"}`},
		{"semver_compare", map[string]any{"a": "1.0.0-rc.1", "b": "1.0.0-beta.11"}, `{"order":1,"greater":"1.0.0-rc.1"}`},
		{"semver_compare", map[string]any{"a": "1.0.0-alpha.1", "b": "1.0.0-alpha"}, `{"order":1,"greater":"1.0.0-alpha.1"}`},
		{"semver_compare", map[string]any{"a": "2.0.0+build.5", "b": "v2.0.0"}, `{"order":0,"greater":"2.0.0+build.5"}`},
		{"semver_compare", map[string]any{"a": "1.0.0", "b": "1.0.0-rc.9"}, `{"order":1,"greater":"1.0.0"}`},
		{"semver_bump", map[string]any{"version": "1.2.3", "part": "minor"}, `{"version":"1.3.0"}`},
		{"semver_bump", map[string]any{"version": "1.2.3", "part": "major"}, `{"version":"2.0.0"}`},
		{"semver_bump", map[string]any{"version": "1.2.3-rc.1", "part": "patch"}, `{"version":"1.2.3"}`},
		{"semver_bump", map[string]any{"version": "1.2.3", "part": "prerelease", "preid": "rc"}, `{"version":"1.2.4-rc.0"}`},
		{"semver_bump", map[string]any{"version": "1.2.4-rc.0", "part": "prerelease"}, `{"version":"1.2.4-rc.1"}`},
		{"semver_bump", map[string]any{"version": "2.0.0-beta.3", "part": "prerelease", "preid": "rc"}, `{"version":"2.0.0-rc.0"}`},
	} {
		res := r.Call(t, "semver__"+c.tool, c.args)
		if res.IsError || tooltest.Text(res) != c.want {
			t.Errorf("%s %v: got %v %q, want %q", c.tool, c.args, res.IsError, tooltest.Text(res), c.want)
		}
	}
	for _, c := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"semver_compare", map[string]any{"a": "1.2", "b": "1.0.0"}, "a"},
		{"semver_compare", map[string]any{"a": "1.0.0", "b": "01.0.0"}, "b"},
		{"semver_compare", map[string]any{"a": "1.0.0"}, "b"},                             // the schema: required
		{"semver_bump", map[string]any{"version": "1.0.0", "part": "huge"}, "part"},       // the schema: enum
		{"semver_bump", map[string]any{"version": "1.0.0", "part": "major", "x": 1}, "x"}, // additionalProperties
		{"semver_bump", map[string]any{"version": "1.0.0-", "part": "major"}, "version"},
	} {
		res := r.Call(t, "semver__"+c.tool, c.args)
		if !res.IsError || !strings.HasPrefix(tooltest.Text(res), c.field+":") {
			t.Errorf("%s %v: want an error naming %s, got %v %q", c.tool, c.args, c.field, res.IsError, tooltest.Text(res))
		}
	}
}

// TestSemverBuildsAsCommitted rebuilds the plugin from assembly/ with the
// pinned toolchain (when npm is on PATH and not in -short mode) and checks
// that semver.wasm is what the sources build.
func TestSemverBuildsAsCommitted(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping the AssemblyScript build (npm ci, asc) in -short mode")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not on PATH: the committed semver.wasm is tested, not rebuilt")
	}
	files := []string{"package.json", "package-lock.json", "asconfig.json", "build.sh"}
	ts, _ := filepath.Glob("assembly/*")
	files = append(files, ts...)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	work := filepath.Join(base, "mcphost-test", "as-semver", hex.EncodeToString(h.Sum(nil))[:16])
	built := filepath.Join(work, "semver.wasm")
	if _, err := os.Stat(built); err != nil {
		tmp := work + ".tmp"
		os.RemoveAll(tmp)
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, f), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("sh", "build.sh")
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(base, "mcphost-test", "npm"), "PATH="+filepath.Dir(npm)+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build.sh: %v\n%s", err, out)
		}
		os.RemoveAll(work)
		if err := os.Rename(tmp, work); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("semver.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatalf("semver.wasm (%d bytes) is not what assembly/ builds (%d bytes): run ./build.sh and commit semver.wasm", len(committed), len(got))
	}
}
