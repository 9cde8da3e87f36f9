package catalog

import (
	"encoding/json"
	"fmt"
	"iter"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/extensions"
	"github.com/mcphost-project/mcphost/host/internal/paramheader"
)

// Route is where an exposed name leads: the only way back from a name to the
// upstream tool. Names are never split to route them.
type Route struct {
	Server string
	Tool   string
}

// Catalog is an immutable snapshot of every upstream's tools under their
// exposed names. A new one is built whenever any upstream's tools change.
type Catalog struct {
	Version uint64
	Tools   []abi.Tool       // config order of servers, then original tool name
	Routes  map[string]Route // exposed name -> upstream tool
	ByTool  map[Route]string // upstream tool -> exposed name
	index   map[Route]int    // upstream tool -> index into tools
	Issues  []Problem        // collisions and clashes found while building
	servers map[string][]int // server -> indexes into tools
	params  map[Route][]paramheader.Binding
}

// Problem is a naming problem the operator should hear about.
type Problem struct {
	Server string
	Tool   string
	Err    error
}

// ServerTools is one upstream's contribution to the catalog.
type ServerTools struct {
	Server string
	Tools  []*mcp.Tool
	// OffersTasks says that mcphost sends the server's tools' task
	// requests to it (upstream.Server.OffersTasks), and Executions are
	// the tools' execution objects as it listed them, by tool name
	// (upstream.Server.CachedExecutions): Execution makes of
	// both what the catalog lists.
	OffersTasks bool
	Executions  map[string]json.RawMessage
}

// Build names every tool and builds the routing table. Servers come
// in config order; within a server, tools are ordered by original name, so
// the same upstream tools always give the same catalog.
func Build(version uint64, cfg ToolsConfig, upstreams []ServerTools) *Catalog {
	nb := NewNameBuilder(cfg)
	c := &Catalog{
		Version: version,
		Routes:  make(map[string]Route),
		ByTool:  make(map[Route]string),
		index:   make(map[Route]int),
		servers: make(map[string][]int),
	}
	n := namer{nb: nb, kind: "tool", routes: c.Routes, byItem: c.ByTool}
	for _, st := range upstreams {
		tools := append([]*mcp.Tool(nil), st.Tools...)
		sort.SliceStable(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
		for _, t := range tools {
			if t == nil {
				continue
			}
			params, err := paramheader.Bindings(rawJSON(t.InputSchema))
			if err != nil {
				// Clients over HTTP must refuse such a tool, and its
				// headers could be neither checked nor sent.
				c.Issues = append(c.Issues, Problem{st.Server, t.Name, fmt.Errorf("tool %q is hidden: its inputSchema's x-mcp-header annotations are invalid: %w", t.Name, err)})
				continue
			}
			name, problems := n.assign(st.Server, t.Name)
			c.Issues = append(c.Issues, problems...)
			if name == "" {
				continue
			}
			if params != nil {
				if c.params == nil {
					c.params = map[Route][]paramheader.Binding{}
				}
				c.params[Route{Server: st.Server, Tool: t.Name}] = params
			}
			c.servers[st.Server] = append(c.servers[st.Server], len(c.Tools))
			c.index[Route{Server: st.Server, Tool: t.Name}] = len(c.Tools)
			tool := toABITool(name, st.Server, t)
			tool.Execution = Execution(st.OffersTasks, st.Executions[t.Name])
			c.Tools = append(c.Tools, tool)
		}
	}
	return c
}

// namer gives (server, item) pairs their exposed names under one
// nameBuilder, for tools and prompts alike: plain names first, a stable hash
// on a collision, and with prefix = "never" a clash across servers hides the
// later item. The routes it fills are the only way back from a name.
type namer struct {
	nb     NameBuilder
	kind   string // "tool" or "prompt", for messages
	routes map[string]Route
	byItem map[Route]string
}

// assign names one item and records its route; it returns "" when the item
// is hidden, and the problems the operator should hear about.
func (n *namer) assign(server, item string) (string, []Problem) {
	r := Route{Server: server, Tool: item}
	if _, dup := n.byItem[r]; dup {
		return "", []Problem{{server, item, fmt.Errorf("upstream listed %s %q twice; the first is kept", n.kind, item)}}
	}
	var problems []Problem
	name := n.nb.Build(server, item)
	if prev, taken := n.routes[name]; taken {
		if !n.nb.prefix && prev.Server != server {
			return "", []Problem{{server, item, fmt.Errorf(
				"%s %q of server %q clashes with the same name from server %q; with tools.prefix = \"never\" names must be unique across servers (rename one, or set prefix = \"always\"); it is hidden", n.kind, item, server, prev.Server)}}
		}
		hashed := n.nb.Hashed(server, item)
		problems = append(problems, Problem{server, item, fmt.Errorf(
			"exposed name %q of %s %q collides with %s %q of server %q; exposed as %q", name, n.kind, item, n.kind, prev.Tool, prev.Server, hashed)})
		name = hashed
		if _, taken := n.routes[name]; taken {
			return "", append(problems, Problem{server, item, fmt.Errorf("exposed name %q collides even after hashing; %s hidden", name, n.kind)})
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

// ParamHeaders returns the x-mcp-header bindings of an upstream tool's own
// inputSchema: the Mcp-Param-* headers a call to it over HTTP carries.
func (c *Catalog) ParamHeaders(r Route) []paramheader.Binding { return c.params[r] }

// Annotations returns the annotations the upstream declared for a tool, so
// call-time hooks can judge a call by them (whatever tools_list made of them).
func (c *Catalog) Annotations(r Route) *abi.Annotations {
	if i, ok := c.index[r]; ok {
		return c.Tools[i].Annotations
	}
	return nil
}

// Execution returns the execution object the catalog lists for a tool
// (Execution), whatever tools_list made of it: a call made
// without a task is refused by it (tasks.Plain).
func (c *Catalog) Execution(r Route) json.RawMessage {
	if i, ok := c.index[r]; ok {
		return c.Tools[i].Execution
	}
	return nil
}

// ServerTools yields every tool of the catalog as its server and its name
// at the server, in catalog order.
func (c *Catalog) ServerTools() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, t := range c.Tools {
			if !yield(t.Server, t.Tool) {
				return
			}
		}
	}
}

// toABITool converts an upstream tool to the form policies see, keeping
// title, description, schemas, annotations and _meta (its ui:// links
// exposed: host/extensions).
func toABITool(name, server string, t *mcp.Tool) abi.Tool {
	out := abi.Tool{
		Name:         name,
		Server:       server,
		Tool:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  rawJSON(t.InputSchema),
		OutputSchema: rawJSON(t.OutputSchema),
	}
	if a := t.Annotations; a != nil {
		out.Annotations = &abi.Annotations{
			Title:           a.Title,
			ReadOnlyHint:    boolPtr(a.ReadOnlyHint),
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  boolPtr(a.IdempotentHint),
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	if len(t.Meta) > 0 {
		// Links to MCP Apps' ui:// resources name them as mcphost serves them.
		out.Meta = rawJSON(extensions.ExposeToolMeta(server, t.Meta))
	}
	return out
}
