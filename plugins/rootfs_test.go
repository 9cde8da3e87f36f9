//go:build !mcphost_extism

// The hardening these tests check is the native engine's; the go-sdk engine
// (mcphost_extism, kept for comparison benchmarks) has the go-sdk's own
// http_request and WASI.

package plugins

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/testproc"
	"github.com/mcphost-project/mcphost/plugins/internal/rootfs"
)

// attackLines runs the fsescape guest and returns its outcomes by name.
func attackLines(t *testing.T, grant string) map[string]string {
	t.Helper()
	rt := newRuntime(t, RuntimeOptions{})
	p := load(t, rt, Spec{Name: "fsescape", Source: guest(t, "fsescape"), Timeout: 10 * time.Second,
		AllowedPaths: map[string]string{grant: "/data"}})
	in := callInput(t, `{}`)
	out, err := p.Call(context.Background(), abi.HookToolCall, in)
	if err != nil {
		t.Fatal(err)
	}
	d := decodedDecision(t, out)
	text := d.Result.Content[0].Text
	t.Logf("guest report:\n%s", text)
	if strings.Contains(text, "host-secret") || strings.Contains(text, "root:") {
		t.Errorf("the guest read outside its grant:\n%s", text)
	}
	m := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		name, rest, _ := strings.Cut(l, " ")
		m[name] = rest
	}
	return m
}

func TestGrantConfinesSymlinks(t *testing.T) {
	t.Parallel()
	for _, ro := range []bool{false, true} {
		name := "writable"
		if ro {
			name = "read-only"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, grant := testproc.EscapeTree(t)
			host := grant
			if ro {
				host = "ro:" + grant
			}
			got := attackLines(t, host)
			refused := []string{"symlink-rel", "read-rel", "symlink-up", "read-up", "symlink-abs", "read-abs-made",
				"read-pre", "read-pre-abs", "write-pre", "list-pre", "read-through-dir", "read-hardlink", "read-dotdot"}
			allowed := map[string]string{"read-given": "ok given"}
			if ro {
				refused = append(refused, "hardlink", "write", "read", "symlink-in", "read-in", "mkdir", "rename", "list", "remove")
			} else {
				for k, v := range map[string]string{"write": "ok ", "read": "ok fine", "symlink-in": "ok ", "read-in": "ok fine",
					"mkdir": "ok ", "rename": "ok ", "list": "ok moved.txt", "remove": "ok "} {
					allowed[k] = v
				}
			}
			for _, n := range refused {
				if l, ok := got[n]; !ok || !strings.HasPrefix(l, "err ") {
					t.Errorf("%s: %q, want refused", n, l)
				}
			}
			for n, want := range allowed {
				if got[n] != want {
					t.Errorf("%s: %q, want %q", n, got[n], want)
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, "written.txt")); err == nil {
				t.Errorf("the guest wrote outside its grant through a link")
			}
			if ro {
				es, _ := os.ReadDir(grant)
				if len(es) != 6 {
					t.Errorf("a read-only grant was changed: %d entries", len(es))
				}
			}
		})
	}
}

func TestGrantMissingDirectory(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	missing := filepath.Join(t.TempDir(), "nope")
	_, err := rt.Load(context.Background(), Spec{Name: "fsescape", Source: guest(t, "fsescape"),
		AllowedPaths: map[string]string{"ro:" + missing: "/data"}})
	if err == nil || !strings.Contains(err.Error(), "allowed_paths") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("error %v, want one naming the grant", err)
	}
}

// TestGrantOpenFileCap: a guest that opens files until it fails is told
// EMFILE at rootfs.MaxOpenFiles, leaves the host able to listen, keeps its files
// (and so its EMFILE) into the next call on the same pooled instance, and
// can open again once it closes them. Files and directories (read or not)
// count alike, and an instance thrown away (trap, timeout) or closed with
// its plugin (a reload) gives back every descriptor it held.
func TestGrantOpenFileCap(t *testing.T) {
	dir := t.TempDir()
	for _, err := range []error{
		os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644),
		os.Mkdir(filepath.Join(dir, "d"), 0o755),
		os.WriteFile(filepath.Join(dir, "d", "e"), nil, 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	rt := newRuntime(t, RuntimeOptions{})
	p := load(t, rt, Spec{Name: "fdhog", Source: guest(t, "fdhog"), Timeout: 2 * time.Second, Instances: 1,
		AllowedPaths: map[string]string{"ro:" + dir: "/data"}})
	call := func(args string) (string, error) {
		t.Helper()
		out, err := p.Call(context.Background(), abi.HookToolCall, callInput(t, args))
		if err != nil {
			return "", err
		}
		return decodedDecision(t, out).Result.Content[0].Text, nil
	}
	expect := func(args, want string) {
		t.Helper()
		if got, err := call(args); got != want || err != nil {
			t.Errorf("%s: %q, %v; want %q", args, got, err, want)
		}
	}
	const slack = 16 // descriptors the runtime and the test's own work may hold
	expect(`{"op":"open","path":"/data/f"}`, "ok")
	base := testproc.HostFDs(t)
	// wazero holds the grant's directory open for the guest: one of the cap.
	full := fmt.Sprintf("held %d EMFILE", rootfs.MaxOpenFiles-1)
	for _, hog := range []string{`{"op":"hog","path":"/data/f"}`, `{"op":"hog","path":"/data/d","readdir":true}`} {
		expect(hog, full)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("the host cannot listen after %s: %v", hog, err)
		}
		ln.Close()
		if n := testproc.HostFDs(t); n > base+rootfs.MaxOpenFiles+slack {
			t.Errorf("%s: the host holds %d descriptors, %d before", hog, n, base)
		}
		expect(`{"op":"open","path":"/data/f"}`, "err EMFILE")
		expect(`{"op":"release"}`, fmt.Sprintf("released %d", rootfs.MaxOpenFiles-1))
		expect(`{"op":"open","path":"/data/f"}`, "ok")
		expect(`{"op":"open","path":"/data/d","readdir":true}`, "ok")
		if n := testproc.HostFDs(t); n > base+slack {
			t.Errorf("after release the host holds %d descriptors, %d before", n, base)
		}
	}
	for _, tc := range []struct {
		op   string
		want error
	}{{"trap", ErrTrap}, {"spin", ErrTimeout}} {
		if _, err := call(`{"op":"` + tc.op + `","path":"/data/f"}`); !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.op, err, tc.want)
		}
		if n := testproc.HostFDs(t); n > base+slack {
			t.Errorf("%s: the instance was thrown away but the host holds %d descriptors, %d before", tc.op, n, base)
		}
		expect(`{"op":"hog","path":"/data/f"}`, full) // a fresh instance, a fresh count
		expect(`{"op":"release"}`, fmt.Sprintf("released %d", rootfs.MaxOpenFiles-1))
	}
	expect(`{"op":"hog","path":"/data/f"}`, full)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := testproc.HostFDs(t); n > base+slack {
		t.Errorf("the plugin was closed but the host holds %d descriptors, %d before", n, base)
	}
}
