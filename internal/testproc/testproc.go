// Package testproc holds what the end-to-end tests of several packages need
// to run real server processes: building them once, free loopback ports,
// process liveness, waiting for a condition, and the fixtures of the
// sandbox tests (a directory tree with links that lead out, the count of
// open descriptors).
package testproc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NeedGuests ends a test that needs Wasm guests whose build returned err:
// it skips when there is no toolchain and fails on any other error, so a
// guest that no longer builds (a broken PDK, say) is a failure, not a skip.
func NeedGuests(t testing.TB, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ErrNoToolchain):
		t.Skip(err)
	default:
		t.Fatal("building the test guests:", err)
	}
}

// Build compiles each package (a path or import path) into dir under the
// given binary name and returns the binaries' paths by name. It is meant
// for TestMain, so it reports errors instead of failing a test.
func Build(dir string, pkgs map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(pkgs))
	for name, pkg := range pkgs {
		bin := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building %s: %w", pkg, err)
		}
		out[name] = bin
	}
	return out, nil
}

// FreeAddr returns a loopback address that nothing listens on right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Alive reports whether pid is a running process; a zombie counts as dead.
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) < 3 || f[2] != "Z"
}

// WaitFor polls cond until it holds, failing the test after timeout.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WasmGuest is one Go plugin to build for wasip1: a package path and
// optional -ldflags.
type WasmGuest struct {
	Pkg     string
	LDFlags string
}

// ErrNoToolchain is BuildWasm's error when there is no go command to build
// with: the one reason a test may skip instead of failing on a guest.
var ErrNoToolchain = errors.New("no go on PATH")

// BuildWasm builds Go guests (name -> package) as wasip1 reactors under
// cacheRoot, in a directory named by the hash of the files matching
// hashGlobs and the toolchain's version, so a rerun with unchanged sources
// builds nothing. It returns each guest's .wasm path by name. The error
// wraps ErrNoToolchain when the toolchain is missing.
func BuildWasm(cacheRoot string, hashGlobs []string, guests map[string]WasmGuest) (map[string]string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoToolchain, err)
	}
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, pattern := range hashGlobs {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(h, "%s %d\n", f, len(b))
			h.Write(b)
		}
	}
	dir := filepath.Join(cacheRoot, hex.EncodeToString(h.Sum(nil))[:16])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	paths := make(map[string]string, len(guests))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for name, g := range guests {
		out := filepath.Join(dir, name+".wasm")
		paths[name] = out
		if _, err := os.Stat(out); err == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := func() error {
				// A directory of its own: parallel tests, or test binaries,
				// may build the same guest at once.
				tmpDir, err := os.MkdirTemp(dir, name+".build-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmpDir)
				tmp := filepath.Join(tmpDir, name+".wasm")
				args := []string{"build", "-buildmode=c-shared", "-o", tmp}
				if g.LDFlags != "" {
					args = append(args, "-ldflags="+g.LDFlags)
				}
				cmd := exec.Command(gobin, append(args, g.Pkg)...)
				cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
				if b, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("go build %s: %v\n%s", name, err, b)
				}
				return os.Rename(tmp, out)
			}()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return paths, errors.Join(errs...)
}

// Buffer is a bytes.Buffer safe for concurrent use: a process's or a
// logger's writer and a test that reads what was written so far.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// EscapeTree lays out a grant g inside dir with a secret next to it and
// links inside g that lead out: what a plugin must never reach.
func EscapeTree(t testing.TB) (dir, grant string) {
	t.Helper()
	dir = t.TempDir()
	grant = filepath.Join(dir, "g")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(grant, 0o755))
	must(os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("host-secret"), 0o644))
	must(os.WriteFile(filepath.Join(grant, "given.txt"), []byte("given"), 0o644))
	must(os.Symlink("../secret.txt", filepath.Join(grant, "pre")))
	must(os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(grant, "pre-abs")))
	must(os.Symlink("../written.txt", filepath.Join(grant, "wlink")))
	must(os.Symlink(strings.Repeat("../", 32), filepath.Join(grant, "rootlink")))
	must(os.Symlink("..", filepath.Join(grant, "dirlink")))
	return dir, grant
}

// hostFDs counts this process's open descriptors, skipping without /proc.
func HostFDs(t testing.TB) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting descriptors: %v", err)
	}
	return len(es)
}
