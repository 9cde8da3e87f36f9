package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/telemetry"
	"github.com/mcphost-project/mcphost/plugins"
)

// File is a decoded config file. Host fields the file leaves out stay zero
// so that host.Config.WithDefaults fills them (and the CLI applies
// host.DefaultListenHTTP); plugin timeout, memory and on_error defaults are
// applied here, so each Spec reads complete.
type File struct {
	Host    gateway.Config
	Plugins []plugins.Spec
	// ToolPlugins are the tools_plugin blocks: plugins of kind
	// plugins.KindTools, each served as a server of its name.
	ToolPlugins []plugins.Spec
	Runtime     Runtime
	// Admin is the admin API's listener; nil without an admin block.
	Admin *Admin
	// Store is where servers added at run time are kept; nil when neither
	// a store nor an admin block is written.
	Store *Store
	// Grants is where upstream OAuth logins keep their tokens; nil when no
	// server logs in and no grants block is written.
	Grants *Grants
	// Audit is the audit log; nil without an audit block.
	Audit *Audit
	// Traces is where OpenTelemetry traces go; nil (no tracing) without a
	// traces block.
	Traces *telemetry.Config
	Path   string // absolute path of the config file

	// Sources lists the absolute paths the config was built from: the file
	// itself, then every file read with file(). A watcher reloads when any
	// of them changes.
	Sources []string

	sourceRanges  map[string]hcl.Range   // sourceKey -> the plugin's source expression
	commandRanges map[string]hcl.Range   // server name -> its command expression
	configRanges  map[string]configRange // sourceKey -> its config
}

// configRange is where a plugin's config object is written, and each of
// its keys when it is written as an object literal.
type configRange struct {
	whole hcl.Range
	keys  map[string]hcl.Range
}

func configRangeOf(attr *hcl.Attribute) configRange {
	r := configRange{whole: attr.Expr.Range(), keys: map[string]hcl.Range{}}
	if obj, ok := attr.Expr.(*hclsyntax.ObjectConsExpr); ok {
		for _, item := range obj.Items {
			if k, diags := item.KeyExpr.Value(nil); !diags.HasErrors() && k.Type() == cty.String {
				r.keys[k.AsString()] = item.KeyExpr.Range()
			}
		}
	}
	return r
}

// ConfigRange returns where key of the plugin's config is written, or the
// whole config object when key is "" or not written as such.
func (f *File) ConfigRange(spec plugins.Spec, key string) (hcl.Range, bool) {
	c, ok := f.configRanges[specKey(spec)]
	if !ok {
		return hcl.Range{}, false
	}
	if r, ok := c.keys[key]; ok && key != "" {
		return r, true
	}
	return c.whole, true
}

// CommandRange returns where a server's command is written, for a
// diagnostic about the program it names.
func (f *File) CommandRange(server string) (hcl.Range, bool) {
	r, ok := f.commandRanges[server]
	return r, ok
}

// SourceRange returns where the plugin's source is written, for a
// diagnostic about the module it names.
func (f *File) SourceRange(spec plugins.Spec) (hcl.Range, bool) {
	r, ok := f.sourceRanges[specKey(spec)]
	return r, ok
}

// specKey is sourceKey for a decoded plugin: a plugin and a tools_plugin
// may share a name.
func specKey(spec plugins.Spec) string {
	if spec.Kind == plugins.KindTools {
		return sourceKey("tools_plugin", spec.Name)
	}
	return sourceKey("plugin", spec.Name)
}

// Runtime configures the process around the host.
type Runtime struct {
	CacheDir string // compile cache directory; empty means none
	Watch    bool   // reload when plugin files or the config change
	// WatchSettle is how long a changed config file must stay unchanged,
	// and closed by whoever wrote it, before it is reloaded.
	WatchSettle time.Duration
}

// Load reads and decodes the config file at path. The returned Diagnostics
// is never nil; File is nil when there is any error.
func Load(path string) (*File, *Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &Diagnostics{List: hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read config file",
			Detail:   fmt.Sprintf("%s. Check the path to the config file.", err),
		}}}
	}
	return Parse(src, path)
}

// Parse decodes src as if read from filename, which names the file in
// diagnostics and anchors relative paths. The returned Diagnostics is never
// nil; File is nil when there is any error.
func Parse(src []byte, filename string) (*File, *Diagnostics) {
	abs, err := filepath.Abs(filename)
	if err != nil {
		return nil, &Diagnostics{List: hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot resolve config path",
			Detail:   fmt.Sprintf("config: absolute path of %q: %s.", filename, err),
		}}}
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	out := &Diagnostics{List: diags, files: map[string]*hcl.File{filename: f}}
	// A body with syntax errors is only partly there; decoding it would
	// report mistakes the operator did not make.
	if diags.HasErrors() {
		return nil, out
	}

	d := &decoder{dir: filepath.Dir(abs), sourceRanges: map[string]hcl.Range{}, commandRanges: map[string]hcl.Range{}, configRanges: map[string]configRange{}}
	if body, ok := f.Body.(*hclsyntax.Body); ok {
		// An empty file is what a writer leaves between truncating and
		// writing: serving it would drop every server and policy.
		if len(body.Attributes) == 0 && len(body.Blocks) == 0 {
			out.List = append(out.List, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Empty config file",
				Detail: fmt.Sprintf("%s has no blocks (it is empty, or only whitespace and comments). A config declares at least one block. "+
					"If the file is being written, write it whole to a temporary file in the same directory and rename it over this one.", filename),
				Subject: body.SrcRange.Ptr(),
			})
			return nil, out
		}
		// Among the decoder's own, so that an attribute holding such a
		// number counts as reported (decoder.reported).
		d.diags = checkNumbers(body)
	}
	d.ctx = d.evalContext()
	file := d.decodeFile(f.Body)
	hideSecrets(d.diags, d.hidden)
	out.List = append(out.List, d.diags...)
	sortBySource(out.List)
	file.Path = abs
	file.Sources = append([]string{abs}, d.sources...)
	file.sourceRanges = d.sourceRanges
	file.commandRanges = d.commandRanges
	file.configRanges = d.configRanges
	if out.HasErrors() {
		file.Plugins = d.loadable(file.Plugins, "plugin", out.List)
		file.ToolPlugins = d.loadable(file.ToolPlugins, "tools_plugin", out.List)
		out.partial = file
		return nil, out
	}
	return file, out
}

// sortBySource orders diagnostics as they appear in the file, so that the
// operator can fix them top to bottom; HCL reports unknown names first and
// cross-block checks come last otherwise. Diagnostics without a position
// stay in front.
func sortBySource(diags hcl.Diagnostics) {
	slices.SortStableFunc(diags, func(a, b *hcl.Diagnostic) int {
		switch {
		case a.Subject == nil && b.Subject == nil:
			return 0
		case a.Subject == nil:
			return -1
		case b.Subject == nil:
			return 1
		}
		return a.Subject.Start.Byte - b.Subject.Start.Byte
	})
}
