package config

import (
	"time"

	"github.com/hashicorp/hcl/v2"
)

// DefaultWatchSettle is how long a watched file must stay unchanged (and
// closed by its writer) before a reload reads it.
const DefaultWatchSettle = 500 * time.Millisecond

// maxWatchSettle bounds watch_settle: longer only delays every edit.
const maxWatchSettle = time.Minute

// decodeRuntime decodes process settings. Watching is on unless turned off,
// so edits take effect without a restart.
func (d *decoder) decodeRuntime(block *hcl.Block) Runtime {
	content, diags := block.Body.Content(runtimeSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes

	r := Runtime{Watch: true, WatchSettle: DefaultWatchSettle}
	if s, ok := d.string(attrs["cache_dir"]); ok && s != "" {
		r.CacheDir = d.path(s)
	}
	if b, ok := d.bool(attrs["watch"]); ok {
		r.Watch = b
	}
	if attr := attrs["watch_settle"]; attr != nil {
		if dur, ok := d.duration(attr, false); ok {
			if dur > maxWatchSettle {
				d.errorf(attr.Expr.Range(), `Invalid duration for "watch_settle"`,
					"watch_settle is at most %s; a longer wait only delays every edit.", maxWatchSettle)
			} else {
				r.WatchSettle = dur
			}
		}
	}
	return r
}
