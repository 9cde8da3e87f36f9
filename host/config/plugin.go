package config

import (
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/plugins"
)

// builtinPrefix marks a plugin compiled into mcphost rather than a file.
const builtinPrefix = "builtin:"

// maxMemoryBytes is all a 32-bit Wasm guest can address.
const maxMemoryBytes = 4 << 30

// pluginRef is one server a plugin is scoped to, checked against the
// declared servers once the whole file is read.
type pluginRef struct {
	plugin, name string
	rng          hcl.Range
}

// decodePlugin decodes one plugin. Unlike host settings, plugin defaults are
// applied here, so a Spec is complete as decoded.
func (d *decoder) decodePlugin(block *hcl.Block) (plugins.Spec, []pluginRef) {
	return d.decodePluginWith(block, pluginSchema, "plugin")
}

// DefaultToolTimeout is a tool plugin's timeout per call when its block
// sets none: tools do work (HTTP requests, transforms) that a policy's
// 100ms would cut short.
const DefaultToolTimeout = 10 * time.Second

// decodeToolsPlugin decodes one tools_plugin block: a plugin of kind
// tools, with the tool grants (kv, progress, client_log) and without a
// policy's scope and on_error.
func (d *decoder) decodeToolsPlugin(block *hcl.Block) plugins.Spec {
	p, _ := d.decodePluginWith(block, toolsPluginSchema, "tools_plugin")
	p.Kind = plugins.KindTools
	content, _ := block.Body.Content(toolsPluginSchema) // diagnostics reported once, above
	attrs := content.Attributes
	if attrs["timeout"] == nil {
		p.Timeout = DefaultToolTimeout
	}
	if v, ok := d.bool(attrs["kv"]); ok {
		p.KV = v
	}
	if v, ok := d.bool(attrs["progress"]); ok {
		p.Progress = v
	}
	if v, ok := d.bool(attrs["client_log"]); ok {
		p.ClientLog = v
	}
	return p
}

func (d *decoder) decodePluginWith(block *hcl.Block, schema *hcl.BodySchema, kind string) (plugins.Spec, []pluginRef) {
	content, diags := block.Body.Content(schema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes

	p := plugins.Spec{
		Name:    block.Labels[0],
		Timeout: plugins.DefaultTimeout,
		Memory:  plugins.DefaultMemoryBytes,
		OnError: plugins.OnErrorDeny,
	}
	d.checkName(block, kind)

	if v, ok := d.string(attrs["source"]); ok {
		p.Source = d.source(attrs["source"], v)
		d.sourceRanges[sourceKey(kind, p.Name)] = attrs["source"].Expr.Range()
	} else if attrs["source"] == nil && !misspelled(block, schema, "source") {
		d.errorf(block.DefRange, "Missing plugin source",
			"%s %q needs source: a path to its .wasm file, like source = \"./policies/check.wasm\", or \"builtin:NAME\" for a built-in plugin.",
			map[string]string{"plugin": "Plugin", "tools_plugin": "Tools plugin"}[kind], p.Name)
	}
	if v, ok := d.string(attrs["sha256"]); ok {
		p.SHA256 = d.sha256(attrs["sha256"], v, p.Source)
	}
	var refs []pluginRef
	if names, ranges, ok := d.stringList(attrs["servers"]); ok {
		p.Servers = names
		for i, n := range names {
			refs = append(refs, pluginRef{plugin: p.Name, name: n, rng: ranges[i]})
		}
	}
	if names, _, ok := d.stringList(attrs["callers"]); ok {
		p.Callers = names
	}
	if names, _, ok := d.stringList(attrs["groups"]); ok {
		p.Groups = names
	}
	if v, ok := d.pluginConfig(attrs["config"]); ok {
		p.Config = v
		d.configRanges[sourceKey(kind, p.Name)] = configRangeOf(attrs["config"])
	}
	if v, ok := d.duration(attrs["timeout"], false); ok {
		p.Timeout = v
	}
	if v, ok := d.size(attrs["memory"]); ok {
		switch {
		case v < plugins.MinMemoryBytes:
			d.errorf(attrs["memory"].Expr.Range(), "Plugin memory too small",
				"memory is %d bytes, but a plugin needs at least 8MiB (Go guests reserve that much at start). Use \"8MiB\" or more, or remove memory for the default of 64MiB.", v)
		case v > maxMemoryBytes:
			d.errorf(attrs["memory"].Expr.Range(), "Plugin memory too large",
				"memory is %d bytes, but a Wasm guest can address at most 4GiB. Use \"4GiB\" or less.", v)
		default:
			p.Memory = v
		}
	}
	if n, ok := d.int(attrs["instances"], 1, plugins.MaxInstances); ok {
		p.Instances = int(n)
	}
	if v, ok := d.enum(attrs["on_error"], plugins.OnErrorDeny, plugins.OnErrorSkip); ok {
		p.OnError = v
	}
	if hosts, ranges, ok := d.stringList(attrs["allowed_hosts"]); ok {
		for i, h := range hosts {
			if h == "" {
				d.errorf(ranges[i], "Empty host in allowed_hosts",
					"Each entry of allowed_hosts is a host name the plugin may reach, like \"api.example.com\" or \"*.example.com\". Remove the empty one.")
			} else if err := plugins.CheckAllowedHost(h); err != nil {
				d.errorf(ranges[i], "Invalid host in allowed_hosts",
					"%v. Each entry is a host name, a pattern or an IP address, with an optional port: \"api.example.com\", \"*.example.com\", \"10.0.0.5:8200\", \"localhost:3000\". Loopback, private and link-local addresses are reachable only through an entry that names the address (or \"localhost\").", err)
			}
		}
		p.AllowedHosts = hosts
	}
	if v, ok := d.allowedPaths(attrs["allowed_paths"]); ok {
		p.AllowedPaths = v
	}
	if v, ok := d.stringMap(attrs["env"]); ok {
		p.Env = v
	}
	d.noteLoadRanges(sourceKey(kind, p.Name), attrs)
	return p, refs
}

// scopeArgs are the plugin arguments that choose which calls a plugin
// sees; its module loads the same whatever they say.
var scopeArgs = []string{"servers", "callers", "groups", "on_error"}

// noteLoadRanges records where the arguments a plugin's module is loaded
// with are written, so that Diagnostics.Partial can leave out a plugin
// whose load would only repeat an error already reported.
func (d *decoder) noteLoadRanges(key string, attrs hcl.Attributes) {
	if d.loadRanges == nil {
		d.loadRanges = map[string][]hcl.Range{}
	}
	for name, attr := range attrs {
		if !slices.Contains(scopeArgs, name) {
			d.loadRanges[key] = append(d.loadRanges[key], attr.Range)
		}
	}
}

// loadable keeps the plugins whose module can be loaded as written: a
// source decoded, and no error in an argument the load uses.
func (d *decoder) loadable(specs []plugins.Spec, kind string, diags hcl.Diagnostics) []plugins.Spec {
	var out []plugins.Spec
	for _, p := range specs {
		if p.Source == "" || anyErrorIn(diags, d.loadRanges[sourceKey(kind, p.Name)]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// anyErrorIn reports whether an error in diags points into one of ranges.
func anyErrorIn(diags hcl.Diagnostics, ranges []hcl.Range) bool {
	for _, diag := range diags {
		if diag.Severity != hcl.DiagError || diag.Subject == nil {
			continue
		}
		for _, r := range ranges {
			if diag.Subject.Overlaps(r) {
				return true
			}
		}
	}
	return false
}

// sourceKey is how File.sourceRanges and configRanges know a plugin:
// tools plugins are named apart from policies.
func sourceKey(kind, name string) string {
	if kind == "tools_plugin" {
		return "tools_plugin:" + name
	}
	return name
}

// source checks a plugin source and makes file paths absolute. The file is
// checked here, where the mistake has a line number, rather than later when
// the engine loads it.
func (d *decoder) source(attr *hcl.Attribute, v string) string {
	rng := attr.Expr.Range()
	switch {
	case v == "":
		d.errorf(rng, "Empty plugin source",
			"source is a path to a .wasm file, like \"./policies/check.wasm\", or \"builtin:NAME\" for a built-in plugin.")
		return ""
	case strings.HasPrefix(v, builtinPrefix):
		if v == builtinPrefix {
			d.errorf(rng, "Missing built-in plugin name",
				"Name the built-in plugin after the prefix, like \"builtin:NAME\".")
			return ""
		}
		return v
	case strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://"):
		d.errorf(rng, "Remote plugin sources are not supported",
			"Download the .wasm file, set source to its path, and pin it with sha256.")
		return ""
	}
	path := d.path(v)
	info, err := os.Stat(path)
	switch {
	case err != nil:
		d.errorf(rng, "Plugin file not found",
			"Cannot use %s: %s. Relative paths are resolved against the config file's directory, %s. Fix the path, or use \"builtin:NAME\" for a built-in plugin.",
			path, describeStatError(err), d.dir)
		return ""
	case !info.Mode().IsRegular():
		d.errorf(rng, "Plugin source is not a file",
			"%s is not a regular file. Point source at the plugin's .wasm file.", path)
		return ""
	}
	if err := checkWasmHeader(path); err != nil {
		d.errorf(rng, "Plugin source is not WebAssembly",
			"Cannot use %s: %s. Point source at a compiled .wasm module (a Go plugin builds with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared).",
			path, strings.TrimPrefix(err.Error(), "plugins: compile failed: "))
		return ""
	}
	return path
}

// checkWasmHeader reads the first bytes of a plugin file and checks them
// as the plugin loader does.
func checkWasmHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	return plugins.CheckHeader(head[:n])
}

func describeStatError(err error) string {
	if os.IsNotExist(err) {
		return "no such file"
	}
	return err.Error()
}

// sha256 checks a hex digest; it is lowercased so comparisons are exact.
func (d *decoder) sha256(attr *hcl.Attribute, v, source string) string {
	if strings.HasPrefix(source, builtinPrefix) {
		d.errorf(attr.NameRange, "sha256 on a built-in plugin",
			"Built-in plugins are part of mcphost and have no file to verify. Remove sha256.")
		return ""
	}
	var problem string
	if len(v) != 64 {
		problem = fmt.Sprintf("this one has %d characters", len(v))
	} else if _, err := hex.DecodeString(v); err != nil {
		problem = "this one has characters other than 0-9 and a-f"
	}
	if problem != "" {
		d.errorf(attr.Expr.Range(), "Invalid sha256",
			"sha256 must be 64 hexadecimal characters, as printed by `sha256sum PLUGIN.wasm`; %s.", problem)
		return ""
	}
	return strings.ToLower(v)
}

// allowedPaths reads host path -> guest path grants. Host paths are made
// absolute against the config directory, keeping Extism's "ro:" prefix
// (read-only) in front.
func (d *decoder) allowedPaths(attr *hcl.Attribute) (map[string]string, bool) {
	m, ok := d.stringMap(attr)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	for _, hostPath := range slices.Sorted(maps.Keys(m)) {
		guest := m[hostPath]
		if hostPath == "" || hostPath == "ro:" || guest == "" {
			d.errorf(attr.Expr.Range(), "Empty path in allowed_paths",
				"allowed_paths maps a host path to the guest path where the plugin sees it, like { \"./data\" = \"/data\" }; prefix the host path with \"ro:\" for read-only. Remove the entry with an empty path.")
			return nil, false
		}
		prefix, rest := "", hostPath
		if strings.HasPrefix(hostPath, "ro:") {
			prefix, rest = "ro:", strings.TrimPrefix(hostPath, "ro:")
		}
		out[prefix+d.path(rest)] = guest
	}
	return out, true
}
