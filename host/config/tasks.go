package config

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/tasks"
)

// tasksSchema is the tasks block: the limits of the MCP tasks mcphost runs
// itself (host/tasks).
var tasksSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "max_per_caller"},
		{Name: "max_total"},
		{Name: "max_ttl"},
		{Name: "default_ttl"},
		{Name: "poll_interval"},
		{Name: "after"},
	},
}

// decodeTasks decodes the tasks block; unset fields stay zero, for
// tasks' defaults.
func (d *decoder) decodeTasks(block *hcl.Block) tasks.Limits {
	content, diags := block.Body.Content(tasksSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	var l tasks.Limits
	if n, ok := d.int(attrs["max_per_caller"], 1, 1<<20); ok {
		l.PerOwner = int(n)
	}
	if n, ok := d.int(attrs["max_total"], 1, 1<<24); ok {
		l.Total = int(n)
	}
	if dur, ok := d.duration(attrs["max_ttl"], false); ok {
		l.MaxTTL = dur
	}
	if dur, ok := d.duration(attrs["default_ttl"], false); ok {
		l.DefaultTTL = dur
	}
	if dur, ok := d.duration(attrs["poll_interval"], false); ok {
		l.PollInterval = dur
	}
	if dur, ok := d.duration(attrs["after"], false); ok {
		l.After = dur
	}
	if l.MaxTTL > 0 && l.DefaultTTL > l.MaxTTL {
		d.errorf(attrs["default_ttl"].Expr.Range(), "default_ttl longer than max_ttl",
			"A task's time to live is at most max_ttl (%s); make default_ttl at most that, or raise max_ttl.", l.MaxTTL)
	}
	return l
}
