package testproc

import (
	"errors"
	"os"
	"sync"
	"testing"
)

// TestBuildWasmConcurrently: parallel tests that build the same guest
// into one cache at once all get it (each build once had the same
// temporary file, and all but one rename failed).
func TestBuildWasmConcurrently(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	guests := map[string]WasmGuest{"g": {Pkg: "./testdata/guest"}}
	var wg sync.WaitGroup
	paths := make([]map[string]string, 4)
	errs := make([]error, len(paths))
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = BuildWasm(root, []string{"testdata/guest/*.go"}, guests)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if errors.Is(err, ErrNoToolchain) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		if _, err := os.Stat(paths[i]["g"]); err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
	}
}
