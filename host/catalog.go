package host

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
)

// route is where an exposed name leads: the only way back from a name to the
// upstream tool. Names are never split to route them.
type route struct {
	server string
	tool   string
}

// catalog is an immutable snapshot of every upstream's tools under their
// exposed names. A new one is built whenever any upstream's tools change.
type catalog struct {
	version uint64
	tools   []abi.Tool       // config order of servers, then original tool name
	routes  map[string]route // exposed name -> upstream tool
	byTool  map[route]string // upstream tool -> exposed name
	index   map[route]int    // upstream tool -> index into tools
	issues  []catalogProblem // collisions and clashes found while building
	servers map[string][]int // server -> indexes into tools
}

// catalogProblem is a naming problem the operator should hear about.
type catalogProblem struct {
	Server string
	Tool   string
	Err    error
}

// serverTools is one upstream's contribution to the catalog.
type serverTools struct {
	server string
	tools  []*mcp.Tool
}

// buildCatalog names every tool and builds the routing table. Servers come
// in config order; within a server, tools are ordered by original name, so
// the same upstream tools always give the same catalog.
func buildCatalog(version uint64, cfg ToolsConfig, upstreams []serverTools) *catalog {
	nb := newNameBuilder(cfg)
	c := &catalog{
		version: version,
		routes:  make(map[string]route),
		byTool:  make(map[route]string),
		index:   make(map[route]int),
		servers: make(map[string][]int),
	}
	n := namer{nb: nb, kind: "tool", routes: c.routes, byItem: c.byTool}
	for _, st := range upstreams {
		tools := append([]*mcp.Tool(nil), st.tools...)
		sort.SliceStable(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
		for _, t := range tools {
			if t == nil {
				continue
			}
			name, problems := n.assign(st.server, t.Name)
			c.issues = append(c.issues, problems...)
			if name == "" {
				continue
			}
			c.servers[st.server] = append(c.servers[st.server], len(c.tools))
			c.index[route{server: st.server, tool: t.Name}] = len(c.tools)
			c.tools = append(c.tools, toABITool(name, st.server, t))
		}
	}
	return c
}

// namer gives (server, item) pairs their exposed names under one
// nameBuilder, for tools and prompts alike: plain names first, a stable hash
// on a collision, and with prefix = "never" a clash across servers hides the
// later item. The routes it fills are the only way back from a name.
type namer struct {
	nb     nameBuilder
	kind   string // "tool" or "prompt", for messages
	routes map[string]route
	byItem map[route]string
}

// assign names one item and records its route; it returns "" when the item
// is hidden, and the problems the operator should hear about.
func (n *namer) assign(server, item string) (string, []catalogProblem) {
	r := route{server: server, tool: item}
	if _, dup := n.byItem[r]; dup {
		return "", []catalogProblem{{server, item, fmt.Errorf("upstream listed %s %q twice; the first is kept", n.kind, item)}}
	}
	var problems []catalogProblem
	name := n.nb.build(server, item)
	if prev, taken := n.routes[name]; taken {
		if !n.nb.prefix && prev.server != server {
			return "", []catalogProblem{{server, item, fmt.Errorf(
				"%s %q of server %q clashes with the same name from server %q; with tools.prefix = \"never\" names must be unique across servers (rename one, or set prefix = \"always\"); it is hidden", n.kind, item, server, prev.server)}}
		}
		hashed := n.nb.hashed(server, item)
		problems = append(problems, catalogProblem{server, item, fmt.Errorf(
			"exposed name %q of %s %q collides with %s %q of server %q; exposed as %q", name, n.kind, item, n.kind, prev.tool, prev.server, hashed)})
		name = hashed
		if _, taken := n.routes[name]; taken {
			return "", append(problems, catalogProblem{server, item, fmt.Errorf("exposed name %q collides even after hashing; %s hidden", name, n.kind)})
		}
	}
	n.routes[name] = r
	n.byItem[r] = name
	return name, problems
}

func boolPtr(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

// rawJSON marshals a schema or object once, at catalog build time, so later
// requests reuse the bytes.
func rawJSON(v any) json.RawMessage {
	switch v := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// annotations returns the annotations the upstream declared for a tool, so
// call-time hooks can judge a call by them (whatever tools_list made of them).
func (c *catalog) annotations(r route) *abi.Annotations {
	if i, ok := c.index[r]; ok {
		return c.tools[i].Annotations
	}
	return nil
}
