package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSensitiveValuesNotPrinted puts values read with env() and file() in
// fields where they are wrong: every diagnostic names where the value came
// from and never prints it.
func TestSensitiveValuesNotPrinted(t *testing.T) {
	const envSecret, fileSecret = `hunter2-"s3cr3t"`, "tok-file-secret"
	t.Setenv("MCPHOST_TEST_SECRET", envSecret)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte(fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromEnv := `(sensitive value from env("MCPHOST_TEST_SECRET"))`
	fromFile := `(sensitive value from file("secret.txt"))`
	for _, tc := range []struct {
		name, src, from string
	}{
		{"duration", "listen {\n  session_timeout = env(\"MCPHOST_TEST_SECRET\")\n}\n", fromEnv},
		{"size", "listen {\n  max_body = file(\"secret.txt\")\n}\n", fromFile},
		{"address", "listen {\n  http = env(\"MCPHOST_TEST_SECRET\")\n}\n", fromEnv},
		{"enum", "server \"s\" {\n  command = \"x\"\n  sessions = file(\"secret.txt\")\n}\n", fromFile},
		{"transport", "server \"s\" {\n  transport = env(\"MCPHOST_TEST_SECRET\")\n  command = \"x\"\n}\n", fromEnv},
		{"url", "server \"s\" {\n  transport = \"sse\"\n  url = file(\"secret.txt\")\n}\n", fromFile},
		{"source", "plugin \"p\" {\n  source = env(\"MCPHOST_TEST_SECRET\")\n}\n", fromEnv},
		{"template", "server \"s\" {\n  command = \"x\"\n  timeout = \"${file(\"secret.txt\")}s\"\n}\n", fromFile},
		{"list", "plugin \"p\" {\n  source = \"builtin:deny\"\n  servers = [env(\"MCPHOST_TEST_SECRET\")]\n}\n", fromEnv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Parse([]byte(tc.src), filepath.Join(dir, "c.hcl"))
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			var buf bytes.Buffer
			if err := diags.WriteText(&buf, 0, false); err != nil {
				t.Fatal(err)
			}
			out := buf.String() + diags.Err().Error()
			for _, s := range []string{envSecret, fileSecret, "hunter2", `s3cr3t`} {
				if strings.Contains(out, s) {
					t.Errorf("diagnostics print the value %q:\n%s", s, out)
				}
			}
			if !strings.Contains(out, tc.from) {
				t.Errorf("diagnostics do not say %s:\n%s", tc.from, out)
			}
		})
	}
}
