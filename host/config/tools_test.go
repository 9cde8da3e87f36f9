package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/plugins"
)

// TestToolsPlugin: a tools_plugin block decodes to a plugin of kind tools
// with its grants, takes a server's name, and refuses a policy's settings.
func TestToolsPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := filepath.Join(dir, "qr.wasm")
	if err := os.WriteFile(wasm, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	file, diags := Parse([]byte(`
tools_plugin "qr" {
  source        = "./qr.wasm"
  allowed_hosts = ["api.example.com"]
  timeout       = "5s"
  memory        = "32MiB"
  instances     = 4
  kv            = true
  progress      = true
  client_log    = true
  config        = { size = 256 }
}
tools_plugin "plain" {
  source = "./qr.wasm"
}
plugin "only-qr" {
  source  = "builtin:deny"
  servers = ["qr"]
  config  = { tools = ["qr__*"] }
}
`), filepath.Join(dir, "mcphost.hcl"))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if len(file.ToolPlugins) != 2 || len(file.Plugins) != 1 {
		t.Fatalf("tool plugins %+v, plugins %+v", file.ToolPlugins, file.Plugins)
	}
	qr := file.ToolPlugins[0]
	if qr.Kind != plugins.KindTools || qr.Source != wasm || qr.Timeout != 5*time.Second || qr.Memory != 32<<20 ||
		qr.Instances != 4 || !qr.KV || !qr.Progress || !qr.ClientLog || qr.Config["size"] != "256" ||
		len(qr.AllowedHosts) != 1 {
		t.Errorf("qr: %+v", qr)
	}
	if p := file.ToolPlugins[1]; p.Timeout != DefaultToolTimeout || p.KV || p.Progress || p.ClientLog || len(p.AllowedHosts) != 0 {
		t.Errorf("plain: grants are not off by default, or the timeout is not the tools' default: %+v", p)
	}

	for _, c := range []struct{ src, want string }{
		{"server \"qr\" {\n  command = \"x\"\n}\ntools_plugin \"qr\" {\n  source = \"./qr.wasm\"\n}\n", "Duplicate server name"},
		{"tools_plugin \"qr\" {\n  source = \"./qr.wasm\"\n  on_error = \"skip\"\n}\n", "on_error"},
		{"tools_plugin \"qr\" {\n  source = \"./qr.wasm\"\n  servers = [\"a\"]\n}\n", "servers"},
		{"tools_plugin \"qr\" {\n  kv = true\n}\n", "Tools plugin \"qr\" needs source"},
		{"tools_plugin \"qr\" {\n  source = \"./qr.wasm\"\n  kv = \"yes\"\n}\n", "kv"},
		{"tools_plugin \"q r\" {\n  source = \"./qr.wasm\"\n}\n", "Invalid tools_plugin name"},
	} {
		_, diags := Parse([]byte(c.src), filepath.Join(dir, "mcphost.hcl"))
		if !diags.HasErrors() || !strings.Contains(diags.Err().Error(), c.want) {
			t.Errorf("%s: want an error with %q, got %v", c.src, c.want, diags.Err())
		}
	}
}

// TestToolsExposure: tools { exposure, always } decode into the host's
// tools config, and a bad exposure or pattern is an error at its place.
func TestToolsExposure(t *testing.T) {
	t.Parallel()
	file, diags := Parse([]byte(`
tools {
  exposure = "search"
  always   = ["clock__current_time", "notes__*"]
}
`), "mcphost.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if tc := file.Host.Tools; tc.Exposure != "search" || strings.Join(tc.Always, ",") != "clock__current_time,notes__*" {
		t.Errorf("tools config %+v", tc)
	}
	for _, c := range []struct{ src, want string }{
		{"tools {\n  exposure = \"serch\"\n}\n", `mcphost.hcl:2:14: Invalid exposure; exposure must be "list", "search" or "code", not "serch". Did you mean "search"?`},
		{"tools {\n  always = [\"ok\", \"bad[\"]\n}\n", `mcphost.hcl:2:19: Invalid tool name`},
		{"tools {\n  always = \"x\"\n}\n", `always`},
	} {
		_, diags := Parse([]byte(c.src), "mcphost.hcl")
		if !diags.HasErrors() || !strings.Contains(diags.Err().Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, diags, c.want)
		}
	}
}
