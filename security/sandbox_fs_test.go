package security

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
				"read-pre", "read-pre-abs", "write-pre", "list-pre", "read-through-dir", "hardlink", "read-hardlink", "read-dotdot"} {
				if !strings.HasPrefix(got[k], "err ") {
					t.Errorf("%s: %q, want refused", k, got[k])
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, "written.txt")); err == nil {
				t.Errorf("the plugin wrote outside its grant")
			}
			// The link found in the grant, "pre" -> ../secret.txt, gets no
			// second name: a hard link of a symlink is a symlink.
			if _, err := os.Lstat(filepath.Join(grant, "hl")); err == nil {
				t.Errorf("the plugin gave the outward link pre a new name, hl")
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

// TestSandboxFSDescriptorCap: a policy plugin with a read-only grant opens
// files until an open fails and keeps them. It is told EMFILE at the cap
// of open files per instance, and mcphost keeps its own descriptors:
// it still accepts connections and serves calls. Without the cap the
// guest took every descriptor the process had, and mcphost could no
// longer accept a connection.
func TestSandboxFSDescriptorCap(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "given.txt"), []byte("given"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "", `
server "up" {
  command = "UPSTREAM"
}

plugin "fsescape" {
  source        = "`+guest(t, "fsescape")+`"
  timeout       = "20s"
  instances     = 1
  allowed_paths = { "ro:`+dir+`" = "/data" }
  config        = { attack = "fds" }
}
`)
	s := startServer(t, cfg)
	fds := func() int {
		es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
		if err != nil {
			t.Skipf("counting mcphost's descriptors: %v", err)
		}
		return len(es)
	}
	cs := connect(t, s.URL, nil)
	base := fds()
	// 256 per instance, one of which is the grant's directory.
	if text, _ := callText(t, cs, "up__echo", map[string]any{"text": "hi"}); text != "fds 255 EMFILE" {
		t.Errorf("the plugin's attack: %q, want %q", text, "fds 255 EMFILE")
	}
	if n := fds(); n > base+256+32 {
		t.Errorf("mcphost holds %d descriptors, %d before the attack", n, base)
	}
	// On a new connection: healthy's client may reuse an idle one.
	c := http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := c.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatalf("mcphost no longer accepts connections: %v", err)
	}
	resp.Body.Close()
	// A new client and a call on the same (full) instance still work.
	cs2 := connect(t, s.URL, nil)
	if text, _ := callText(t, cs2, "up__echo", map[string]any{"text": "again"}); text != "fds 255 EMFILE" {
		t.Errorf("the second call: %q", text)
	}
}
