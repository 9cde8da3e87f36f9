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
  config = { tools = ["x"] }
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

// TestValidateChecksPolicyConfig: validate runs every plugin's describe
// with its configuration, as run would, so that policy mistakes are found
// before run: an unknown built-in, a value a built-in refuses, a bad
// regular expression, a misspelt key; each at its line, with a suggestion
// where there is one.
func TestValidateChecksPolicyConfig(t *testing.T) {
	cfg := writeConfig(t, `
server "up" {
  command = "UPSTREAM"
}

plugin "t" {
  source = "builtin:tittles"
}

plugin "tr" {
  source = "builtin:truncate"
  config = { max_chars = "lots" }
}

plugin "d" {
  source = "builtin:deny"
  config = { tools = ["y"], toolz = ["x"] }
}

plugin "r" {
  source = "builtin:redact"
  config = { patterns = ["(unclosed"] }
}

plugin "fine" {
  source = "builtin:modes"
  config = { mode = "plan" }
}

plugin "only_misspelt" {
  source = "builtin:deny"
  config = { tool = ["x"] }
}
`)
	_, errs, code := mcphost(t, "validate", cfg)
	if code != 1 {
		t.Fatalf("validate: exit %d, want 1; stderr:\n%s", code, errs)
	}
	for _, want := range []string{
		"config.hcl:7:12: error", `unknown builtin "tittles". Did you mean "titles"?`,
		"config.hcl:12:14: error", `config "max_chars"`,
		"config.hcl:17:29: error", `config "toolz": the plugin reads no such key. Did you mean "tools"?`,
		"config.hcl:22:14: error", "(unclosed",
		// The misspelling left deny with nothing to deny: the key is named,
		// not only the consequence.
		`config "tool": the plugin reads no such key. Did you mean "tools"?`,
	} {
		// The renderer wraps long lines.
		if !strings.Contains(strings.Join(strings.Fields(errs), " "), want) {
			t.Errorf("diagnostics lack %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, `"fine"`) {
		t.Errorf("a good plugin is reported:\n%s", errs)
	}
}

// validate's summary counts tool plugins apart from servers, each noun
// in the plural only when it is not one.
func TestValidateSummary(t *testing.T) {
	semver, err := filepath.Abs("../../examples/tools/as-semver/semver.wasm")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ body, want string }{
		{"tools_plugin \"semver\" {\n  source = \"" + semver + "\"\n}\nplugin \"titles\" {\n  source = \"builtin:titles\"\n}\n",
			"ok (0 servers, 1 tool plugin, 1 plugin)"},
		{"server \"up\" {\n  command = \"UPSTREAM\"\n}\ntools_plugin \"a\" {\n  source = \"" + semver + "\"\n}\ntools_plugin \"b\" {\n  source = \"" + semver + "\"\n}\n",
			"ok (1 server, 2 tool plugins, 0 plugins)"},
		{"server \"up\" {\n  command = \"UPSTREAM\"\n}\n", "ok (1 server, 0 plugins)"},
	} {
		cfg := writeConfig(t, tc.body)
		if out, errs, code := runCLI(t, "validate", cfg); code != 0 || out != cfg+": "+tc.want+"\n" {
			t.Errorf("validate: exit %d, %q, want %q\n%s", code, out, tc.want, errs)
		}
	}
}

// TestValidateChecksPluginsPastOtherErrors: a mistake elsewhere in the
// file does not hide a plugin (or tools_plugin) that would not load, so
// one run reports both; a plugin whose own arguments have an error is not loaded, so that
// error is not reported a second time as a plugin that does not load.
func TestValidateChecksPluginsPastOtherErrors(t *testing.T) {
	cfg := writeConfig(t, `
server "files" {
  command = "UPSTREAM"
  timout  = "5s"
}

plugin "p" {
  source = "builtin:nosuch"
}

plugin "q" {
  source = "builtin:deny"
  config = { tools = env("MCPHOST_TEST_UNSET_VAR") }
}

plugin "r" {
  source = "./missing.wasm"
}

tools_plugin "t" {
  source = "builtin:nosuch2"
}
`)
	_, errs, code := mcphost(t, "validate", cfg)
	if code != 1 {
		t.Fatalf("validate: exit %d, want 1; stderr:\n%s", code, errs)
	}
	flat := strings.Join(strings.Fields(errs), " ")
	for _, want := range []string{
		"config.hcl:4:3: error", `Did you mean "timeout"?`,
		"config.hcl:8:12: error", `unknown builtin "nosuch"`,
		"config.hcl:13:22: error", "Environment variable not set",
		"config.hcl:17:12: error", "Plugin file not found",
		"config.hcl:21:12: error", `Tools plugin "t"`, `unknown builtin "nosuch2"`,
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, errs)
		}
	}
	if n := strings.Count(errs, ": error\n"); n != 5 {
		t.Errorf("%d errors, want 5 (one per mistake):\n%s", n, errs)
	}
	// In source order, as the operator fixes them.
	if i, j := strings.Index(errs, "config.hcl:4:3"), strings.Index(errs, "config.hcl:8:12"); i > j {
		t.Errorf("diagnostics out of source order:\n%s", errs)
	}
}

// TestValidateCommands: a stdio server whose program this machine lacks is
// an error at its command (a warning with --allow-missing-commands), as the
// admin API refuses it and run would retry it for ever.
func TestValidateCommands(t *testing.T) {
	cfg := writeConfig(t, `
server "ghost" {
  command = "ghost-mcp-server-that-is-not-installed"
}
server "clock" {
  command = "CLOCK"
}
`)
	out, errs, code := mcphost(t, "validate", cfg)
	if code != 1 || !strings.Contains(errs, "config.hcl:3:13: error") || !strings.Contains(errs, `no program "ghost-mcp-server-that-is-not-installed"`) || strings.Contains(errs, "clock") {
		t.Errorf("validate with a missing command: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = mcphost(t, "validate", cfg, "--allow-missing-commands")
	if code != 0 || !strings.Contains(errs, "config.hcl:3:13: warning") || !strings.Contains(out, "ok (2 servers") {
		t.Errorf("validate --allow-missing-commands: exit %d\n%s%s", code, out, errs)
	}
}
