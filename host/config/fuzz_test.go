package config

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcphost-project/mcphost/host/auth"
)

// FuzzParse feeds arbitrary bytes to Parse. The config file is outside
// input: whatever it holds, Parse must not panic, must report every failure
// as a positioned diagnostic, and must return a File exactly when there is
// no error.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*.hcl")
	if err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, filepath.Join("testdata", "valid", "full.hcl"))
	for _, path := range seeds {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("server \"s\" {\n  command = \"${env(\"HOME\", \"x\")}\"\n  args = [for x in [1] : x]\n}\n"))
	f.Add([]byte("plugin \"p\" {\n  source = \"builtin:p\"\n  config = { a = [1, {b = null}], c = 1/0 }\n}\n"))
	f.Add([]byte("listen {\n  session_timeout = env(\"HOME\")\n  http = \"${file(\"fuzz_test.go\")}\"\n}\nserver \"s\" {\n  command = env(\"HOME\") == \"\" ? \"a\" : [for c in [env(\"PATH\")] : c][0]\n}\n"))
	f.Add([]byte("tools_plugin \"qr\" {\n  source = \"builtin:x\"\n  kv = true\n  progress = 1\n  allowed_hosts = [\"*.x\"]\n  timeout = \"5s\"\n}\nserver \"qr\" {\n  command = \"x\"\n}\n"))
	f.Add([]byte("listen {\n  max_body = 18446744073709551616\n  session_timeout = \"9999999h\"\n}\n"))
	f.Add([]byte("listen {\n  auth {\n    key \"a\" {\n      value = \"0123456789abcdef\"\n      subject = \"a\"\n      attributes = { t = \"x\" }\n    }\n  }\n}\nserver \"m\" {\n  command = \"x\"\n  args = [caller.subject, caller.groups[0]]\n  env = { F = \"/m/${caller.attributes.t}\" }\n  cwd = caller.attributes[\"t\"]\n}\n"))

	f.Fuzz(func(t *testing.T, src []byte) {
		const name = "fuzz.hcl"
		file, diags := Parse(src, name)
		if diags == nil {
			t.Fatal("Parse returned nil diagnostics")
		}
		if (file == nil) != diags.HasErrors() {
			t.Fatalf("file != nil is %v but HasErrors is %v", file != nil, diags.HasErrors())
		}
		for _, d := range diags.List {
			if d.Summary == "" {
				t.Errorf("diagnostic without summary: %+v", d)
			}
			if d.Subject != nil && d.Subject.Filename != name {
				t.Errorf("diagnostic %q points at %q, not %q", d.Summary, d.Subject.Filename, name)
			}
		}
		if err := diags.WriteText(io.Discard, 80, true); err != nil {
			t.Fatalf("WriteText: %v", err)
		}
		if file == nil {
			return
		}
		// Caller templates are filled in at run time, for any caller:
		// errors, never a panic.
		for _, s := range file.Host.Servers {
			if s.Caller != nil {
				s.Caller.Apply(s, &auth.Identity{Subject: "s", Groups: []string{"g"}, Attributes: map[string]string{"t": "v"}}, nil)
				s.Caller.Apply(s, nil, nil)
			}
		}
	})
}
