package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/codemode"
)

var codeSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "timeout"},
		{Name: "memory"},
		{Name: "max_calls"},
		{Name: "max_output"},
		{Name: "max_running"},
	},
}

// decodeCodeBlocks decodes the limits of code mode's scripts: the code
// block inside tools (at most one). Without exposure = "code" they are
// kept and unused, as the README's example of every default has them.
func (d *decoder) decodeCodeBlocks(blocks hcl.Blocks) codemode.Limits {
	var lim codemode.Limits
	for i, block := range blocks {
		if i > 0 {
			d.errorf(block.DefRange, "Duplicate code block",
				"Only one code block is allowed in tools and one is already declared at %s. Merge the two.", position(blocks[0].DefRange))
			continue
		}
		content, diags := block.Body.Content(codeSchema)
		d.diags = append(d.diags, diags...)
		attrs := content.Attributes
		if dur, ok := d.duration(attrs["timeout"], false); ok {
			lim.Timeout = dur
		}
		if n, ok := d.size(attrs["memory"]); ok {
			if n < codemode.MinMemory || n > codemode.MaxMemory {
				d.errorf(attrs["memory"].Expr.Range(), "Invalid memory for code mode",
					"memory is the most a script's engine may use: between %d MiB and %d MiB. The default is %d MiB.", codemode.MinMemory>>20, codemode.MaxMemory>>20, codemode.DefaultMemory>>20)
			} else {
				lim.Memory = int64(n)
			}
		}
		if n, ok := d.int(attrs["max_calls"], 1, 10000); ok {
			lim.MaxCalls = int(n)
		}
		if n, ok := d.int(attrs["max_running"], 1, 1024); ok {
			lim.MaxRunning = int(n)
		}
		if n, ok := d.size(attrs["max_output"]); ok {
			if n < 1024 || n > 16<<20 {
				d.errorf(attrs["max_output"].Expr.Range(), "Invalid max_output for code mode",
					"max_output bounds what run_code answers (the script's value and its console lines): between 1KiB and 16MiB. The default is %s.", fmt.Sprintf("%dKiB", codemode.DefaultMaxOutput>>10))
			} else {
				lim.MaxOutput = int(n)
			}
		}
	}
	return lim
}
