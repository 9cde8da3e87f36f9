package config

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/codemode"
	"github.com/mcphost-project/mcphost/host/search"
)

// Bounds of max_name_length: the host needs 16 to fit a server, a tool and
// its collision hash, and MCP clients are asked to accept up to 128.
const (
	minToolNameLength = 16
	maxToolNameLength = abi.MaxToolNameLength
)

// decodeTools decodes how upstream tools are named and shown downstream
// (exposure, always), and the limits of code mode (codemode.go).
func (d *decoder) decodeTools(block *hcl.Block) (catalog.ToolsConfig, codemode.Limits) {
	content, diags := block.Body.Content(toolsSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes

	var t catalog.ToolsConfig
	if s, ok := d.string(attrs["separator"]); ok {
		if s == "" || !isToolNameText(s) {
			d.errorf(attrs["separator"].Expr.Range(), "Invalid separator",
				"separator %q joins server and tool names, so it must be one or more of the characters every MCP client accepts in tool names: letters, digits, '_' and '-'. The default is %q.",
				s, catalog.DefaultSeparator)
		} else {
			t.Separator = s
		}
	}
	if n, ok := d.int(attrs["max_name_length"], minToolNameLength, maxToolNameLength); ok {
		t.MaxNameLength = int(n)
	}
	if s, ok := d.enum(attrs["prefix"], catalog.PrefixAlways, catalog.PrefixNever); ok {
		t.Prefix = s
	}
	if s, ok := d.enum(attrs["exposure"], catalog.ExposureList, catalog.ExposureSearch, catalog.ExposureCode); ok {
		t.Exposure = s
	}
	if names, ranges, ok := d.stringList(attrs["always"]); ok {
		for i, n := range names {
			if search.CheckAlways([]string{n}) != nil {
				d.errorf(ranges[i], "Invalid tool name", "%q is neither a tool's exposed name nor a pattern of them: always takes names, or patterns where * matches any run of characters, ? one character and [...] one of a class.", n)
				ok = false
			}
		}
		if ok {
			t.Always = names
		}
	}
	return t, d.decodeCodeBlocks(content.Blocks.OfType("code"))
}

// decodeResources decodes how resources served by several upstreams merge.
func (d *decoder) decodeResources(block *hcl.Block) catalog.ResourcesConfig {
	content, diags := block.Body.Content(resourcesSchema)
	d.diags = append(d.diags, diags...)
	var r catalog.ResourcesConfig
	if s, ok := d.enum(content.Attributes["conflict"], catalog.ResourceConflictFirst, catalog.ResourceConflictError); ok {
		r.Conflict = s
	}
	return r
}

// isToolNameText reports whether s uses only [A-Za-z0-9_-], the characters
// the host keeps in exposed tool names (it replaces others with '_'). Server
// names and the separator end up in those names, so they are held to it.
func isToolNameText(s string) bool {
	for i := 0; i < len(s); i++ {
		if !abi.IsToolNameByte(s[i]) {
			return false
		}
	}
	return true
}
