// Package wasmbuild builds the built-in policies' Wasm module the one way
// that gives the same bytes every time: used by `go generate ./filters`
// and by the test that checks the committed module against its sources.
package wasmbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Flags are the go build flags. -trimpath and -buildvcs=false keep the
// checkout's path and commit out of the module, -ldflags=-buildid= the
// build ID; c-shared makes a WASI reactor, which mcphost requires.
var Flags = []string{"-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-ldflags=-buildid="}

// Package is the guest package, relative to the filters directory.
const Package = "./guest"

// env returns the environment for go: the caller's, with everything that
// changes the output pinned.
func env() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS", "GOWASM", "GOEXPERIMENT", "GOTOOLCHAIN":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=", "GOWASM=", "GOTOOLCHAIN=local")
}

// Build builds the module from the filters directory dir into out.
func Build(ctx context.Context, dir, out string) error {
	args := append([]string{"build"}, Flags...)
	args = append(args, "-o", out, Package)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// GoVersion returns the version of the go command that Build runs, like
// "go1.26.8".
func GoVersion(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	cmd.Dir = dir
	cmd.Env = env()
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %v", err)
	}
	return string(bytes.TrimSpace(b)), nil
}
