package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateChecksPluginModules: validate loads every plugin's module
// as a reload would and reports one that would not load at the line of
// its source.
func TestValidateChecksPluginModules(t *testing.T) {
	for _, tc := range []struct {
		file, body string
		want       []string
	}{
		{"script.wasm", "#!/bin/sh\nexit 0\n", []string{"config.hcl:7:12: error", "Plugin source is not WebAssembly", `starts with "#!/bin/s"`}},
		{"broken.wasm", "\x00asm\x01\x00\x00\x00\x01\xff\xff\xff\xff\x0f garbage", []string{"config.hcl:7:12: error", "Plugin does not load", `Plugin "p"`}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			cfg := writeConfig(t, `
server "up" {
  command = "UPSTREAM"
}

plugin "p" {
  source = "./`+tc.file+`"
}

plugin "ok" {
  source = "builtin:deny"
}
`)
			if err := os.WriteFile(filepath.Join(filepath.Dir(cfg), tc.file), []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errs, code := mcphost(t, "validate", cfg)
			if code != 1 {
				t.Fatalf("validate: exit %d, want 1; stderr:\n%s", code, errs)
			}
			for _, want := range tc.want {
				if !strings.Contains(errs, want) {
					t.Errorf("diagnostics lack %q:\n%s", want, errs)
				}
			}
			if strings.Contains(errs, `"ok"`) || strings.Contains(errs, "\x00") {
				t.Errorf("unexpected diagnostics:\n%q", errs)
			}
		})
	}
}
