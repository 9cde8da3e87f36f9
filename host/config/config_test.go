package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/plugins"
)

// Tests that set or unset environment variables, which env() reads, stay
// serial (t.Setenv refuses t.Parallel); the others call t.Parallel.
func TestLoadFullConfig(t *testing.T) {
	t.Setenv("MCPHOST_TEST_TOKEN", "s3cret")
	os.Unsetenv("MCPHOST_TEST_REMOTE")
	path := filepath.Join("testdata", "valid", "full.hcl")
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}

	f, diags := Load(path)
	if diags.HasErrors() || len(diags.List) != 0 {
		t.Fatalf("Load(%s): unexpected diagnostics: %v", path, diags.List)
	}

	want := &File{
		Host: gateway.Config{
			Listen: listener.Config{
				HTTP:           "127.0.0.1:7700",
				AuthToken:      "s3cret",
				SessionTimeout: 45 * time.Minute,
				MaxBodyBytes:   8 << 20,
			},
			Servers: []upstream.ServerConfig{{
				Name:            "files",
				Transport:       upstream.TransportStdio,
				Command:         "npx",
				Args:            []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"},
				Env:             map[string]string{"DEBUG": "1", "LEVEL": "3"},
				Cwd:             filepath.Join(dir, "work"),
				Timeout:         90 * time.Second,
				IdleTimeout:     -1,
				ConnectTimeout:  10 * time.Second,
				Sessions:        upstream.SessionsPerClient,
				ProtocolVersion: "2025-06-18",
			}, {
				Name:      "remote",
				Transport: upstream.TransportStreamableHTTP,
				URL:       "https://mcp.example.com/mcp",
				Headers: map[string]string{
					"Authorization": "Bearer fallback",
					"X-Token":       "secret-from-file",
				},
				IdleTimeout: 5 * time.Minute,
			}, {
				Name:      "events",
				Transport: upstream.TransportSSE,
				URL:       "http://localhost:9000/sse",
			}},
			Tools: catalog.ToolsConfig{Separator: "_", MaxNameLength: 100, Prefix: catalog.PrefixNever},
		},
		Plugins: []plugins.Spec{{
			Name:    "no-destructive",
			Source:  filepath.Join(dir, "policies", "no-destructive.wasm"),
			SHA256:  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			Servers: []string{"files", "remote"},
			Config: map[string]string{
				"mode":   "plan",
				"limit":  "2000",
				"ratio":  "0.5",
				"strict": "true",
				"tags":   `["a","b"]`,
				"nested": `{"deep":[1,null]}`,
				"none":   "null",
			},
			Timeout:      250 * time.Millisecond,
			Memory:       16 << 20,
			OnError:      plugins.OnErrorSkip,
			AllowedHosts: []string{"api.example.com"},
			AllowedPaths: map[string]string{filepath.Join(dir, "data"): "/data", "ro:/etc/ssl": "/ssl"},
			Env:          map[string]string{"TZ": "UTC"},
		}, {
			Name:    "audit",
			Source:  "builtin:audit",
			Timeout: plugins.DefaultTimeout,
			Memory:  plugins.DefaultMemoryBytes,
			OnError: plugins.OnErrorDeny,
		}},
		Runtime: Runtime{CacheDir: filepath.Join(dir, ".cache"), Watch: false, WatchSettle: 2 * time.Second},
		Path:    filepath.Join(dir, "full.hcl"),
		Sources: []string{filepath.Join(dir, "full.hcl"), filepath.Join(dir, "token.txt")},
	}
	if r, ok := f.SourceRange(f.Plugins[0]); !ok || r.Start.Line != 44 {
		t.Errorf("SourceRange(no-destructive) = %v, %v; want line 44", r, ok)
	}
	if r, ok := f.ConfigRange(f.Plugins[0], "limit"); !ok || r.Start.Line != 49 || r.Start.Column != 5 {
		t.Errorf("ConfigRange(no-destructive, limit) = %v, %v; want line 49 column 5", r, ok)
	}
	if r, ok := f.ConfigRange(f.Plugins[0], "missing"); !ok || r.Start.Line != 47 {
		t.Errorf("ConfigRange(no-destructive, missing) = %v, %v; want the config object, line 47", r, ok)
	}
	f.sourceRanges, f.commandRanges, f.configRanges = nil, nil, nil
	if !reflect.DeepEqual(f, want) {
		t.Errorf("Load(%s) =\n%+v\nwant\n%+v", path, f, want)
	}
}

// TestDefaults checks what an almost empty file decodes to: host settings
// stay zero for host.Config.WithDefaults, plugin defaults are filled in.
func TestDefaults(t *testing.T) {
	t.Parallel()
	src := `
server "s" {
  command = "srv"
}
plugin "p" {
  source = "builtin:p"
}
`
	f, diags := Parse([]byte(src), "defaults.hcl")
	if diags.HasErrors() {
		t.Fatalf("unexpected errors: %v", diags.List)
	}
	wantHost := gateway.Config{Servers: []upstream.ServerConfig{{Name: "s", Command: "srv"}}}
	if !reflect.DeepEqual(f.Host, wantHost) {
		t.Errorf("Host = %+v, want %+v", f.Host, wantHost)
	}
	wantSpec := plugins.Spec{
		Name: "p", Source: "builtin:p",
		Timeout: plugins.DefaultTimeout, Memory: plugins.DefaultMemoryBytes, OnError: plugins.OnErrorDeny,
	}
	if !reflect.DeepEqual(f.Plugins, []plugins.Spec{wantSpec}) {
		t.Errorf("Plugins = %+v, want %+v", f.Plugins, wantSpec)
	}
	if !f.Runtime.Watch {
		t.Error("Runtime.Watch = false, want true by default")
	}
	if f.Runtime.WatchSettle != DefaultWatchSettle {
		t.Errorf("Runtime.WatchSettle = %s, want %s by default", f.Runtime.WatchSettle, DefaultWatchSettle)
	}
}

// TestServerValues decodes one server block per case.
func TestServerValues(t *testing.T) {
	t.Setenv("MCPHOST_TEST_SET", "from-env")
	tests := []struct {
		name string
		body string
		want func(s upstream.ServerConfig) any
		is   any
	}{
		{"http alias", `transport = "http"` + "\n" + `url = "https://x.test/mcp"`,
			func(s upstream.ServerConfig) any { return s.Transport }, upstream.TransportStreamableHTTP},
		{"idle zero means never", `command = "c"` + "\n" + `idle_timeout = "0"`,
			func(s upstream.ServerConfig) any { return s.IdleTimeout }, time.Duration(-1)},
		{"idle 0s means never", `command = "c"` + "\n" + `idle_timeout = "0s"`,
			func(s upstream.ServerConfig) any { return s.IdleTimeout }, time.Duration(-1)},
		{"idle duration", `command = "c"` + "\n" + `idle_timeout = "1h30m"`,
			func(s upstream.ServerConfig) any { return s.IdleTimeout }, 90 * time.Minute},
		{"numbers in args become text", `command = "c"` + "\n" + `args = ["-p", 8080, true]`,
			func(s upstream.ServerConfig) any { return s.Args }, []string{"-p", "8080", "true"}},
		{"interpolated env", `command = "c"` + "\n" + `args = ["--name=${env("MCPHOST_TEST_SET")}"]`,
			func(s upstream.ServerConfig) any { return s.Args }, []string{"--name=from-env"}},
		{"env default", `command = env("MCPHOST_TEST_UNSET", "fallback")`,
			func(s upstream.ServerConfig) any { return s.Command }, "fallback"},
		{"absolute cwd kept", `command = "c"` + "\n" + `cwd = "/srv/../srv/x"`,
			func(s upstream.ServerConfig) any { return s.Cwd }, "/srv/x"},
		{"null means unset", `command = "c"` + "\n" + `timeout = null`,
			func(s upstream.ServerConfig) any { return s.Timeout }, time.Duration(0)},
	}
	os.Unsetenv("MCPHOST_TEST_UNSET")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "server \"s\" {\n" + tt.body + "\n}\n"
			f, diags := Parse([]byte(src), "server.hcl")
			if diags.HasErrors() {
				t.Fatalf("unexpected errors: %v", diags.List)
			}
			if got := tt.want(f.Host.Servers[0]); !reflect.DeepEqual(got, tt.is) {
				t.Errorf("got %#v, want %#v", got, tt.is)
			}
		})
	}
}

// TestErrorSummaries checks that each mistake yields its own diagnostic,
// anchored in the file, and that File is nil when anything is wrong.
func TestErrorSummaries(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		summary string
		line    int
	}{
		{"unset env", "listen {\n  auth_token = env(\"MCPHOST_TEST_UNSET\")\n}", "Environment variable not set", 2},
		{"too many env args", "listen {\n  auth_token = env(\"A\", \"b\", \"c\")\n}", "Invalid function argument", 2},
		{"unknown function", "listen {\n  auth_token = secret(\"x\")\n}", "Call to unknown function", 2},
		{"variables not allowed", "listen {\n  auth_token = token\n}", "Variables not allowed", 2},
		{"negative session timeout", "listen {\n  session_timeout = \"-1s\"\n}", `Invalid duration for "session_timeout"`, 2},
		{"zero max body", "listen {\n  max_body = 0\n}", `Invalid size for "max_body"`, 2},
		{"zero write timeout", "listen {\n  write_timeout = \"0s\"\n}", `Invalid duration for "write_timeout"`, 2},
		{"bad read timeout", "listen {\n  read_timeout = \"soon\"\n}", `Invalid duration for "read_timeout"`, 2},
		{"negative idle timeout", "listen {\n  idle_timeout = \"-1m\"\n}", `Invalid duration for "idle_timeout"`, 2},
		{"zero max connections", "listen {\n  max_connections = 0\n}", `Invalid value for "max_connections"`, 2},
		{"origin with a path", "listen {\n  allowed_origins = [\"https://ok.example\", \"https://app.example.com/ui\"]\n}", "Invalid origin in allowed_origins", 2},
		{"tls cert without key", "listen {\n  tls_cert = \"cert.pem\"\n}", "Incomplete TLS settings", 1},
		{"tls files missing", "listen {\n  tls_cert = \"/nonexistent/cert.pem\"\n  tls_key = \"/nonexistent/key.pem\"\n}", "Cannot load the TLS certificate", 2},
		{"fractional max sessions", "listen {\n  max_sessions = 1.5\n}", `Invalid value for "max_sessions"`, 2},
		{"bad port", "listen {\n  http = \"127.0.0.1:http\"\n}", `Invalid address for "http"`, 2},
		{"object for string", "server \"s\" {\n  command = { a = 1 }\n}", `Invalid value for "command"`, 2},
		{"nested env value", "server \"s\" {\n  command = \"c\"\n  env = { A = [1] }\n}", `Invalid value for "env"`, 3},
		{"null in args", "server \"s\" {\n  command = \"c\"\n  args = [\"a\", null]\n}", `Invalid value for "args"`, 3},
		{"fractional length", "tools {\n  max_name_length = 20.5\n}", `Invalid value for "max_name_length"`, 2},
		{"duplicate listen", "listen {}\nlisten {}", "Duplicate listen block", 2},
		{"duplicate runtime", "runtime {}\nruntime {}", "Duplicate runtime block", 2},
		{"top-level argument", "http = \"x\"", "Unsupported argument", 1},
		{"missing label", "server {\n  command = \"c\"\n}", "Missing name for server", 1},
		{"empty name", "server \"\" {\n  command = \"c\"\n}", "Invalid server name", 1},
		{"huge number", "listen {\n  http = \"${1e9999999}\"\n}", "Number out of range", 2},
		{"tiny number", "plugin \"p\" {\n  source = \"builtin:p\"\n  config = { n = 1e-9999 }\n}", "Number out of range", 3},
		{"settle too long", "runtime {\n  watch_settle = \"2h\"\n}", `Invalid duration for "watch_settle"`, 2},
		{"settle zero", "runtime {\n  watch_settle = \"0s\"\n}", `Invalid duration for "watch_settle"`, 2},
		{"empty file", "", "Empty config file", 1},
		{"whitespace only", "\n  \n\t\n", "Empty config file", 1},
		{"comments only", "# servers come later\n// and plugins\n/* too */\n", "Empty config file", 1},
		{"division by zero", "plugin \"p\" {\n  source = \"builtin:p\"\n  config = { n = 1/0 }\n}", "", 0},
	}
	os.Unsetenv("MCPHOST_TEST_UNSET")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, diags := Parse([]byte(tt.src), "case.hcl")
			if tt.summary == "" {
				return // only must not panic
			}
			if f != nil || !diags.HasErrors() {
				t.Fatalf("Parse succeeded; want %q", tt.summary)
			}
			for _, d := range diags.List {
				if d.Summary == tt.summary {
					if d.Subject == nil || d.Subject.Filename != "case.hcl" || d.Subject.Start.Line != tt.line {
						t.Errorf("%q at %v, want case.hcl line %d", d.Summary, d.Subject, tt.line)
					}
					return
				}
			}
			t.Errorf("no %q among %v", tt.summary, diags.List)
		})
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"1024", 1024, false},
		{"16MiB", 16 << 20, false},
		{"16 MiB", 16 << 20, false},
		{"16mib", 16 << 20, false},
		{"4KiB", 4096, false},
		{"4KB", 4000, false},
		{"2MB", 2000000, false},
		{"1GiB", 1 << 30, false},
		{"1GB", 1000000000, false},
		{"10B", 10, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"1.5MiB", 0, true},
		{"-1MiB", 0, true},
		{"+1", 0, true},
		{"16TiB", 0, true},
		{"18446744073709551615GiB", 0, true},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	names := []string{"stdio", "sse", "streamable-http"}
	tests := map[string]string{
		"stido":     ` Did you mean "stdio"?`,
		"ssee":      ` Did you mean "sse"?`,
		"websocket": "",
	}
	for given, want := range tests {
		if got := didYouMean(given, names); got != want {
			t.Errorf("didYouMean(%q) = %q, want %q", given, got, want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	f, diags := Load(filepath.Join(t.TempDir(), "absent.hcl"))
	if f != nil || !diags.HasErrors() {
		t.Fatalf("Load of a missing file: got %v, %v", f, diags.List)
	}
	if diags.List[0].Summary != "Cannot read config file" {
		t.Errorf("summary = %q", diags.List[0].Summary)
	}
	var sb strings.Builder
	if err := diags.WriteText(&sb, 0, false); err != nil || !strings.Contains(sb.String(), "absent.hcl") {
		t.Errorf("WriteText = %q, %v; want the path in the text", sb.String(), err)
	}
}

func TestErr(t *testing.T) {
	t.Parallel()
	_, diags := Parse([]byte("listen {\n  http = \"0.0.0.0:1\"\n}\n"), "warn.hcl")
	if diags.Err() != nil || len(diags.List) != 1 || diags.List[0].Severity != hcl.DiagWarning {
		t.Fatalf("a warning alone: Err() = %v, diags %v", diags.Err(), diags.List)
	}
	_, diags = Parse([]byte("listen {\n  http = \"0.0.0.0:1\"\n  max_body = \"x\"\n}\n"), "err.hcl")
	err := diags.Err()
	var hd hcl.Diagnostics
	if !errors.As(err, &hd) || len(hd) != 1 || !strings.HasPrefix(err.Error(), "config: err.hcl:3:14: Invalid size") {
		t.Errorf("Err() = %v; want only the error, as hcl.Diagnostics with its position as file:line:col", err)
	}
	// Every error, one a line, each at file:line:col as validate prints
	// them: a reload's log and status name the same places.
	_, diags = Parse([]byte("server \"a\" {\n  comand = \"x\"\n}\nserver \"a\" {\n  command = \"x\"\n}\n"), "two.hcl")
	lines := strings.Split(diags.Err().Error(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "config: two.hcl:2:3: Unsupported argument; ") ||
		!strings.HasPrefix(lines[1], "two.hcl:4:8: Duplicate server name; A server named \"a\" is already declared at two.hcl:1:1. ") {
		t.Errorf("Err() = %q; want both errors, one a line, at file:line:col", diags.Err())
	}
	var nilDiags *Diagnostics
	if nilDiags.HasErrors() || nilDiags.Err() != nil || nilDiags.WriteText(&strings.Builder{}, 0, false) != nil {
		t.Error("a nil *Diagnostics must read as empty")
	}
}

func TestListenLimits(t *testing.T) {
	t.Parallel()
	src := `
listen {
  read_timeout    = "5s"
  write_timeout   = "7s"
  idle_timeout    = "1m"
  max_connections = 100
  max_sessions    = 50
}
`
	f, diags := Parse([]byte(src), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	l := f.Host.Listen
	if l.ReadTimeout != 5*time.Second || l.WriteTimeout != 7*time.Second || l.IdleTimeout != time.Minute || l.MaxConnections != 100 || l.MaxSessions != 50 {
		t.Errorf("listen = %+v", l)
	}
	d := gateway.Config{}.WithDefaults().Listen
	if d.ReadTimeout <= 0 || d.WriteTimeout <= 0 || d.IdleTimeout <= 0 || d.MaxConnections <= 0 || d.MaxSessions <= 0 {
		t.Errorf("defaults leave a limit unset: %+v", d)
	}
}

func TestSessionAndResourceSettings(t *testing.T) {
	t.Parallel()
	src := `
server "s" {
  command      = "x"
  sessions     = "per_client"
  max_sessions = 8
}
resources {
  conflict = "error"
}
plugin "p" {
  source    = "builtin:titles"
  instances = 2
}
`
	f, diags := Parse([]byte(src), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if s := f.Host.Servers[0]; s.Sessions != "per_client" || s.MaxSessions != 8 {
		t.Errorf("server = %+v", s)
	}
	if f.Host.Resources.Conflict != "error" {
		t.Errorf("resources = %+v", f.Host.Resources)
	}
	if f.Plugins[0].Instances != 2 {
		t.Errorf("plugin instances = %d", f.Plugins[0].Instances)
	}
	_, diags = Parse([]byte(`resources { conflict = "last" }`+"\nserver \"s\" {\n command = \"x\"\n max_sessions = 0\n}\n"), "t.hcl")
	if n := len(diags.List); n != 2 {
		t.Errorf("want 2 diagnostics (conflict, max_sessions), got %d: %v", n, diags.Err())
	}
}

// TestPluginSourceNotWasm: a plugin source that is not a WebAssembly
// module is refused where source is written.
func TestPluginSourceNotWasm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"script.wasm": "#!/bin/sh\necho hi\n",
		"empty.wasm":  "",
		"v2.wasm":     "\x00asm\x0d\x00\x01\x00",
		"ok.wasm":     "\x00asm\x01\x00\x00\x00",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := "plugin \"a\" {\n  source = \"./script.wasm\"\n}\nplugin \"b\" {\n  source = \"./empty.wasm\"\n}\nplugin \"c\" {\n  source = \"./v2.wasm\"\n}\nplugin \"d\" {\n  source = \"./ok.wasm\"\n}\n"
	_, diags := Parse([]byte(src), filepath.Join(dir, "c.hcl"))
	var lines []int
	for _, d := range diags.List {
		if d.Summary == "Plugin source is not WebAssembly" {
			lines = append(lines, d.Subject.Start.Line)
		}
	}
	if !reflect.DeepEqual(lines, []int{2, 5, 8}) {
		t.Errorf("not-WebAssembly diagnostics on lines %v, want [2 5 8]: %v", lines, diags.List)
	}
}

// TestPartial: a file with errors still gives what decoded, for the checks
// after decoding, with only the plugins whose module loads as written.
func TestPartial(t *testing.T) {
	os.Unsetenv("MCPHOST_TEST_UNSET")
	src := `
server "a" {
  command = "x"
  timout  = "5s"
}
plugin "clean" {
  source  = "builtin:nosuch"
  servers = ["nope"] # scope: the module loads the same
  memroy  = "64MiB"  # an unknown argument: the module loads with the default
}
plugin "badconfig" {
  source = "builtin:deny"
  config = { tools = env("MCPHOST_TEST_UNSET") }
}
plugin "badmemory" {
  source = "builtin:deny"
  memory = "1KiB"
}
plugin "nosource" {
  sourc = "builtin:deny"
}
tools_plugin "t" {
  source  = "builtin:deny"
  timeout = "soon"
}
`
	f, diags := Parse([]byte(src), "p.hcl")
	if f != nil || !diags.HasErrors() {
		t.Fatalf("Parse: got %v, %v; want errors and no File", f, diags.List)
	}
	p := diags.Partial()
	if p == nil {
		t.Fatal("Partial() = nil")
	}
	var names []string
	for _, sp := range p.Plugins {
		names = append(names, sp.Name)
	}
	if !reflect.DeepEqual(names, []string{"clean"}) || len(p.ToolPlugins) != 0 {
		t.Errorf("Partial plugins = %v, tool plugins %v; want only [clean]", names, p.ToolPlugins)
	}
	if _, ok := p.SourceRange(p.Plugins[0]); !ok || len(p.Host.Servers) != 1 {
		t.Errorf("Partial lacks the source range or the server: %+v", p)
	}

	if _, diags := Parse([]byte("server \"a\" {\n  command = \"x\"\n}\n"), "ok.hcl"); diags.Partial() != nil {
		t.Error("Partial() of a file without errors is not nil")
	}
	if _, diags := Parse([]byte("server {"), "syntax.hcl"); diags.Partial() != nil {
		t.Error("Partial() of a file that does not parse is not nil")
	}
}
