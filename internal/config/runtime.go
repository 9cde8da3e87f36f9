package config

import "github.com/hashicorp/hcl/v2"

// decodeRuntime decodes process settings. Watching is on unless turned off,
// so edits take effect without a restart.
func (d *decoder) decodeRuntime(block *hcl.Block) Runtime {
	content, diags := block.Body.Content(runtimeSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes

	r := Runtime{Watch: true}
	if s, ok := d.string(attrs["cache_dir"]); ok && s != "" {
		r.CacheDir = d.path(s)
	}
	if b, ok := d.bool(attrs["watch"]); ok {
		r.Watch = b
	}
	return r
}
