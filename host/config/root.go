package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// decodeFile decodes the top level: at most one listen, tools and runtime
// block, any number of server and plugin blocks, in the order written.
func (d *decoder) decodeFile(body hcl.Body) *File {
	content, diags := body.Content(rootSchema)
	d.diags = append(d.diags, diags...)

	file := &File{Runtime: Runtime{Watch: true, WatchSettle: DefaultWatchSettle}}
	singletons := map[string]*hcl.Block{}
	var pluginRefs []pluginRef
	var serverBlocks []*hcl.Block // parallel to file.Host.Servers
	servers := newNameSet("server")
	plugs := newNameSet("plugin")
	quotas := newNameSet("quota")
	var quotaRefs []quotaRef
	toolsets := newNameSet("toolset")
	var toolsetRefs []toolsetRef
	for _, block := range content.Blocks {
		switch block.Type {
		case "listen", "tools", "runtime", "resources", "admin", "store", "grants", "audit", "traces", "tasks":
			if first, dup := singletons[block.Type]; dup {
				d.errorf(block.DefRange, fmt.Sprintf("Duplicate %s block", block.Type),
					"Only one %s block is allowed and one is already declared at %s. Merge the two.",
					block.Type, position(first.DefRange))
				continue
			}
			singletons[block.Type] = block
		}
		switch block.Type {
		case "listen":
			file.Host.Listen = d.decodeListen(block)
		case "tools":
			file.Host.Tools, file.Host.Code = d.decodeTools(block)
		case "runtime":
			file.Runtime = d.decodeRuntime(block)
		case "resources":
			file.Host.Resources = d.decodeResources(block)
		case "admin":
			file.Admin = d.decodeAdmin(block)
		case "store":
			file.Store = d.decodeStore(block)
		case "grants":
			file.Grants = d.decodeGrants(block)
		case "audit":
			file.Audit = d.decodeAudit(block)
		case "traces":
			file.Traces = d.decodeTraces(block)
		case "tasks":
			file.Host.Tasks = d.decodeTasks(block)
		case "server":
			servers.add(d, block)
			file.Host.Servers = append(file.Host.Servers, d.decodeServer(block))
			serverBlocks = append(serverBlocks, block)
		case "tools_plugin":
			// A tool plugin is served as a server: it takes a server's name.
			servers.add(d, block)
			file.ToolPlugins = append(file.ToolPlugins, d.decodeToolsPlugin(block))
		case "quota":
			quotas.add(d, block)
			q, refs := d.decodeQuota(block)
			file.Host.Quotas = append(file.Host.Quotas, q)
			quotaRefs = append(quotaRefs, refs...)
		case "toolset":
			toolsets.add(d, block)
			t, refs := d.decodeToolset(block)
			file.Host.Toolsets = append(file.Host.Toolsets, t)
			toolsetRefs = append(toolsetRefs, refs...)
		case "plugin":
			plugs.add(d, block)
			spec, refs := d.decodePlugin(block)
			file.Plugins = append(file.Plugins, spec)
			pluginRefs = append(pluginRefs, refs...)
		}
	}
	// Plugins may be declared before the servers they scope to, so the
	// references are checked once every server is known.
	for _, ref := range pluginRefs {
		if !servers.has(ref.name) {
			d.errorf(ref.rng, "Unknown server",
				"Plugin %q is scoped to server %q, but no server block has that name.%s Declare the server, or remove it from servers.",
				ref.plugin, ref.name, didYouMean(ref.name, servers.names))
		}
	}
	d.checkQuotaServers(quotaRefs, servers)
	d.checkToolsetServers(toolsetRefs, servers)
	d.checkServersWithHost(file, serverBlocks, singletons["listen"])
	d.checkCallerRefs(file.Host.Listen.Auth, file.Store)
	d.checkAdmin(file, singletons["admin"])
	d.checkAudit(file, singletons["audit"])
	d.defaultGrants(file)
	return file
}

// nameSet tracks the labels of one kind of block to catch duplicates.
type nameSet struct {
	kind  string
	names []string
	at    map[string]hcl.Range
}

func newNameSet(kind string) *nameSet {
	return &nameSet{kind: kind, at: map[string]hcl.Range{}}
}

func (s *nameSet) has(name string) bool {
	_, ok := s.at[name]
	return ok
}

// add records the block's name, reporting a duplicate at the second
// declaration with the first one's location in the detail.
func (s *nameSet) add(d *decoder, block *hcl.Block) {
	name := block.Labels[0]
	if first, dup := s.at[name]; dup {
		d.errorf(block.LabelRanges[0], fmt.Sprintf("Duplicate %s name", s.kind),
			"A %s named %q is already declared at %s. Each %s needs its own name; rename or remove one of them.",
			s.kind, name, position(first), s.kind)
		return
	}
	s.at[name] = block.DefRange
	s.names = append(s.names, name)
}
