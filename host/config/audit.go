package config

import (
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/plugins"
)

// Audit configures the audit log (host/audit, docs/audit.md): a line per
// tools/call, to a file and, when the config has a store, to the store.
type Audit struct {
	// File is the absolute path of the log, audit.Stdout ("-") for
	// standard output, or "" to keep the lines in the store only.
	File     string
	MaxSize  int64 // bytes; a file is rotated before it grows past this
	MaxFiles int   // files kept, the current one included
	// Arguments, Results and Listings add the call's arguments, its
	// result, and a line for each change of the tools policies hide from
	// a caller's listing.
	Arguments, Results, Listings bool
	// Redact is the plugin whose message hook masks arguments and results
	// before they are written: the one the block names, else the first
	// plugin with source "builtin:redact"; "" when there is none.
	Redact string
	// Retention and MaxRows bound the lines kept in the store; -1 means no
	// bound of that kind.
	Retention time.Duration
	MaxRows   int
}

// maxAuditRows bounds max_rows: past it, the table is better pruned by age.
const maxAuditRows = 100_000_000

func (d *decoder) decodeAudit(block *hcl.Block) *Audit {
	content, diags := block.Body.Content(auditSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	a := &Audit{MaxSize: audit.DefaultMaxSize, MaxFiles: audit.DefaultMaxFiles, Retention: audit.DefaultRetention, MaxRows: audit.DefaultMaxRows}
	if attr := attrs["file"]; attr != nil {
		if v, ok := d.string(attr); ok {
			switch v {
			case "":
				d.errorf(attr.Expr.Range(), "Empty audit file", `file names where the audit lines go: a path like "audit.jsonl" (relative to this file), or "-" for standard output. Remove it to keep the lines in the store only.`)
			case audit.Stdout:
				a.File = audit.Stdout
			default:
				a.File = d.path(v)
			}
		}
	}
	if attr := attrs["max_size"]; attr != nil {
		if n, ok := d.size(attr); ok {
			if n < 1<<10 || n > 1<<40 {
				d.errorf(attr.Expr.Range(), `Invalid size for "max_size"`, `max_size must be from 1KiB to 1TiB, like "100MiB".`)
			} else {
				a.MaxSize = int64(n)
			}
		}
	}
	if n, ok := d.int(attrs["max_files"], 1, 1000); ok {
		a.MaxFiles = int(n)
	}
	for name, dst := range map[string]*bool{"arguments": &a.Arguments, "results": &a.Results, "listings": &a.Listings} {
		if v, ok := d.bool(attrs[name]); ok {
			*dst = v
		}
	}
	if v, ok := d.string(attrs["redact"]); ok {
		a.Redact = v
	}
	if v, ok := d.duration(attrs["retention"], true); ok {
		a.Retention = v
	}
	if n, ok := d.int(attrs["max_rows"], 0, maxAuditRows); ok {
		a.MaxRows = int(n)
		if n == 0 {
			a.MaxRows = -1
		}
	}
	return a
}

// checkAudit checks what the audit block says against the rest of the
// file (run last: the store and the plugins must be known) and picks the
// redact plugin.
func (d *decoder) checkAudit(file *File, block *hcl.Block) {
	a := file.Audit
	if a == nil {
		return
	}
	content, _ := block.Body.Content(auditSchema) // diagnostics reported by decodeAudit
	attrs := content.Attributes
	if d.missing(attrs["file"], a.File) && file.Store == nil {
		d.errorf(block.DefRange, "Audit log without a destination",
			`The audit block names no file and the config has no store, so the lines would go nowhere. `+
				`Add file = "audit.jsonl" (or "-" for standard output), or a store block.`)
	}
	if file.Store == nil {
		for _, name := range []string{"retention", "max_rows"} {
			if attr := attrs[name]; attr != nil {
				d.warnf(attr.NameRange, "Audit retention without a store",
					"%s bounds the audit lines kept in the store, and this config has none; the file is bounded by max_size and max_files. Remove %s, or add a store block.", name, name)
			}
		}
	} else if a.Retention < 0 && a.MaxRows < 0 {
		d.warnf(block.DefRange, "Audit lines kept forever",
			`retention = "0" and max_rows = 0 keep every audit line in the store; the table grows without bound. Set one of them.`)
	}
	var names []string
	for _, p := range file.Plugins {
		names = append(names, p.Name)
	}
	if attr := attrs["redact"]; attr != nil && a.Redact != "" {
		found := false
		for _, p := range file.Plugins {
			found = found || p.Name == a.Redact
		}
		if !found {
			d.errorf(attr.Expr.Range(), "Unknown plugin",
				"audit.redact names plugin %q, but no plugin block has that name.%s Name a plugin with a message hook, such as one with source = \"builtin:redact\".",
				a.Redact, didYouMean(a.Redact, names))
		}
		return
	}
	for _, p := range file.Plugins {
		if p.Source == plugins.BuiltinPrefix+"redact" {
			a.Redact = p.Name
			break
		}
	}
	if a.Redact == "" && (a.Arguments || a.Results) {
		d.warnf(block.DefRange, "Audit arguments and results unmasked",
			`arguments or results are written to the audit log, and no plugin masks them first: there is no plugin with source = "builtin:redact". `+
				`Add one (plugin "redact" { source = "builtin:redact" }), or name a plugin with a message hook in redact.`)
	}
}
