package clientconfig_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hcl2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"golang.org/x/tools/txtar"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/internal/clientconfig"
)

var update = flag.Bool("update", false, "rewrite the golden config.hcl and report sections")

// TestGolden: each testdata file is a client's config (input), the server
// blocks it imports as (config.hcl) and what the import tells its user
// (report). The blocks must decode as mcphost config, and hold none of the
// values the source had in clear for a reference. Not parallel: it sets
// the variables the imported config reads (t.Setenv).
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string]*txtar.File{}
			for i := range ar.Files {
				sections[ar.Files[i].Name] = &ar.Files[i]
			}
			in := sections["input"]
			if in == nil {
				t.Fatal("no input section")
			}
			res, err := clientconfig.Parse(in.Data)
			if err != nil {
				t.Fatal(err)
			}
			hcl := clientconfig.HCL("input", res.Servers)
			report := []byte("format: " + string(res.Format) + "\n" + res.Report())
			if *update {
				for name, data := range map[string][]byte{"config.hcl": hcl, "report": report} {
					if f := sections[name]; f != nil {
						f.Data = data
					} else {
						ar.Files = append(ar.Files, txtar.File{Name: name, Data: data})
					}
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for name, got := range map[string][]byte{"config.hcl": hcl, "report": report} {
				if want := sections[name]; want == nil || !bytes.Equal(got, want.Data) {
					t.Errorf("%s differs (go test -update rewrites it); got:\n%s", name, got)
				}
			}
			for _, s := range res.Servers {
				for _, v := range values(s) {
					for _, p := range v {
						if p.HasClear && bytes.Contains(hcl, []byte(p.Clear)) {
							t.Errorf("server %s: the clear value of %s is in the config", s.Name, p.Env)
						}
					}
				}
			}
			defaults := map[string]bool{}
			for _, s := range res.Servers {
				for _, v := range values(s) {
					for _, p := range v {
						defaults[p.Env] = defaults[p.Env] || p.HasDefault
					}
				}
			}
			for _, e := range res.Env {
				if !defaults[e.Name] { // the others decode with their default
					t.Setenv(e.Name, "set-by-the-test")
				}
			}
			if _, diags := config.Parse(hcl, "imported.hcl"); diags.HasErrors() {
				t.Errorf("the imported config does not decode:\n%v\n%s", diags.Err(), hcl)
			}
		})
	}
}

func values(s clientconfig.Server) []clientconfig.Value {
	out := append([]clientconfig.Value{s.URL}, s.Args...)
	for _, p := range s.Env {
		out = append(out, p.Value)
	}
	for _, p := range s.Headers {
		out = append(out, p.Value)
	}
	return out
}

// TestResolve: a definition added directly (mcphost import --admin) gets
// the values the source held in clear, the environment's for the others,
// and a clear error naming what is unset.
func TestResolve(t *testing.T) {
	t.Parallel()
	res, err := clientconfig.Parse([]byte(`{"mcpServers": {"gh": {"command": "gh-mcp",
		"env": {"GITHUB_TOKEN": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "DIR": "${HOME_DIR}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	env := res.Servers[0].Env
	lookup := func(name string) (string, bool) {
		return map[string]string{"HOME_DIR": "/home/a"}[name], name == "HOME_DIR"
	}
	if got, err := env[1].Value.Resolve(lookup); err != nil || got != "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB" {
		t.Errorf("the token: %q, %v", got, err)
	}
	if got, err := env[0].Value.Resolve(lookup); err != nil || got != "/home/a" {
		t.Errorf("DIR: %q, %v", got, err)
	}
	none := func(string) (string, bool) { return "", false }
	if _, err := env[0].Value.Resolve(none); err == nil || !strings.Contains(err.Error(), "set HOME_DIR") {
		t.Errorf("an unset variable: %v", err)
	}
}

// FuzzParse: whatever the file holds, Parse answers or refuses, and what it
// answers renders as HCL that decodes.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range ar.Files {
			if s.Name == "input" {
				f.Add(s.Data)
			}
		}
	}
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["${"]}}}`))
	f.Add([]byte(`{"server": {"name": "a/b", "remotes": [{"type": "sse", "url": "{u}", "variables": {"u": {"isSecret": true}}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := clientconfig.Parse(data)
		if err != nil {
			return
		}
		hcl := clientconfig.HCL("fuzz", res.Servers)
		if _, diags := hclsyntax.ParseConfig(hcl, "fuzz.hcl", hcl2.InitialPos); diags.HasErrors() {
			t.Fatalf("the rendered HCL does not parse: %s\n%s", diags.Error(), hcl)
		}
	})
}
