package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestGoldenDiagnostics parses each testdata/*.hcl and compares the printed
// diagnostics with testdata/*.golden. Run with -update after changing a
// message, and review the diff.
func TestGoldenDiagnostics(t *testing.T) {
	t.Setenv("MCPHOST_TEST_SET", "set")
	os.Unsetenv("MCPHOST_TEST_UNSET")
	// Details name absolute paths; keep the golden files independent of
	// where the repository is checked out.
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	inputs, err := filepath.Glob("testdata/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no testdata/*.hcl inputs")
	}
	for _, input := range inputs {
		name := strings.TrimSuffix(filepath.Base(input), ".hcl")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(input)
			if err != nil {
				t.Fatal(err)
			}
			file, diags := Parse(src, input)
			var buf bytes.Buffer
			if err := diags.WriteText(&buf, 0, false); err != nil {
				t.Fatal(err)
			}
			got := bytes.ReplaceAll(buf.Bytes(), []byte(abs), []byte("$TESTDATA"))
			// Every golden case is a broken config: it must fail to load.
			if !diags.HasErrors() || file != nil {
				t.Errorf("Parse(%s) succeeded; golden inputs must contain an error", input)
			}

			goldenPath := strings.TrimSuffix(input, ".hcl") + ".golden"
			if *update {
				if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("diagnostics for %s differ from %s (run go test -update to accept)\n--- got\n%s\n--- want\n%s",
					input, goldenPath, got, want)
			}
		})
	}
}
