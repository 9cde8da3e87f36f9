package security

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxFSSymlinkEscape: a policy plugin with a writable grant (as
// builtin:pin needs) makes symlinks out of it, follows links that were
// already there, writes through them and lists / through them, then
// reports what it got as its tool result. Nothing outside the grant may
// be read, written or listed; ordinary work inside it still succeeds.
func TestSandboxFSSymlinkEscape(t *testing.T) {
	for _, ro := range []bool{false, true} {
		name := "writable"
		if ro {
			name = "read-only"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			grant := filepath.Join(dir, "g")
			for _, err := range []error{
				os.Mkdir(grant, 0o755),
				os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("host-secret"), 0o644),
				os.WriteFile(filepath.Join(grant, "given.txt"), []byte("given"), 0o644),
				os.Symlink("../secret.txt", filepath.Join(grant, "pre")),
				os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(grant, "pre-abs")),
				os.Symlink("../written.txt", filepath.Join(grant, "wlink")),
				os.Symlink(strings.Repeat("../", 32)+"root", filepath.Join(grant, "rootlink")),
				os.Symlink("..", filepath.Join(grant, "dirlink")),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			host := grant
			if ro {
				host = "ro:" + grant
			}
			cfg := writeConfig(t, dir, `
server "up" {
  command = "UPSTREAM"
}

plugin "fsescape" {
  source        = "`+guest(t, "fsescape")+`"
  timeout       = "20s"
  allowed_paths = { "`+host+`" = "/data" }
}
`)
			s := startServer(t, cfg)
			cs := connect(t, s.URL, nil)
			text, _ := callText(t, cs, "up__echo", map[string]any{"text": "hi"})
			t.Logf("guest report:\n%s", text)
			if !strings.Contains(text, "read-given ok given") {
				t.Fatalf("the plugin did not run its attack:\n%s", text)
			}
			if strings.Contains(text, "host-secret") || strings.Contains(text, "root:x:") {
				t.Errorf("the plugin read a host file outside its grant")
			}
			got := map[string]string{}
			for _, l := range strings.Split(text, "\n") {
				k, v, _ := strings.Cut(l, " ")
				got[k] = v
			}
			for _, k := range []string{"symlink-rel", "read-rel", "symlink-up", "read-up", "symlink-abs",
				"read-pre", "read-pre-abs", "write-pre", "list-pre", "read-through-dir", "read-hardlink", "read-dotdot"} {
				if !strings.HasPrefix(got[k], "err ") {
					t.Errorf("%s: %q, want refused", k, got[k])
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, "written.txt")); err == nil {
				t.Errorf("the plugin wrote outside its grant")
			}
			want := "ok fine"
			if ro {
				want = "err"
			}
			if !strings.HasPrefix(got["read-in"], want) || !strings.HasPrefix(got["read"], want) {
				t.Errorf("inside the grant: write %q, read %q, link %q; want %q", got["write"], got["read"], got["read-in"], want)
			}
		})
	}
}
