// Package testproc holds what the end-to-end tests of several packages need
// to run real server processes: building them once, free loopback ports,
// process liveness, and waiting for a condition.
package testproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
