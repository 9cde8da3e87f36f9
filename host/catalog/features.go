package catalog

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mcphost-project/mcphost/host/extensions"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// Features is an immutable snapshot of every upstream's prompts and
// resources, with the tables that route them. Prompts are named like tools
// (same nameBuilder); resource URIs are kept as they are, and a table maps
// each to its server.
type Features struct {
	Prompts      []*mcp.Prompt    // exposed names, config order then name
	PromptRoutes map[string]Route // exposed name -> (server, prompt)
	promptNames  map[Route]string // (server, prompt) -> exposed name

	Resources     []*mcp.Resource
	Templates     []*mcp.ResourceTemplate
	ByURI         map[string]string   // resource URI -> server
	conflicts     map[string][]string // URI -> servers, with conflict = "error"
	matchers      []templateRoute     // config order
	TemplateOwner map[string]string   // URI template -> server, for completion refs
	resServers    []string            // servers that offer resources, config order
	servers       []string            // every server, config order
	conflict      string

	Issues      []Problem
	PromptPrint [32]byte
	ResPrint    [32]byte
}

type templateRoute struct {
	server string
	re     *regexp.Regexp
}

// BuildFeatures names prompts and builds the resource table. Servers come
// in config order; within a server, items are ordered by name (prompts) or
// URI (resources), so the same upstream lists give the same snapshot.
func BuildFeatures(tcfg ToolsConfig, rcfg ResourcesConfig, ups []upstream.ServerFeatures) *Features {
	f := &Features{
		PromptRoutes:  make(map[string]Route),
		promptNames:   make(map[Route]string),
		ByURI:         make(map[string]string),
		conflicts:     make(map[string][]string),
		conflict:      rcfg.Conflict,
		TemplateOwner: make(map[string]string),
		Prompts:       []*mcp.Prompt{},
		Resources:     []*mcp.Resource{},
		Templates:     []*mcp.ResourceTemplate{},
	}
	n := namer{nb: NewNameBuilder(tcfg), kind: "prompt", routes: f.PromptRoutes, byItem: f.promptNames}
	resIndex := make(map[string]int) // URI -> index into f.resources
	tmplOwner := f.TemplateOwner
	for _, sf := range ups {
		f.servers = append(f.servers, sf.Server)
		prompts := sortedBy(sf.Prompts, func(p *mcp.Prompt) string { return p.Name })
		for _, p := range prompts {
			name, problems := n.assign(sf.Server, p.Name)
			f.Issues = append(f.Issues, problems...)
			if name == "" {
				continue
			}
			exposed := *p
			exposed.Name = name
			f.Prompts = append(f.Prompts, &exposed)
		}
		if len(sf.Resources) > 0 || len(sf.Templates) > 0 {
			f.resServers = append(f.resServers, sf.Server)
		}
		for _, r := range sortedBy(sf.Resources, func(r *mcp.Resource) string { return r.URI }) {
			r = extensions.ExposeResource(sf.Server, r) // ui:// URIs carry their server
			prev, taken := f.ByURI[r.URI]
			if prev == sf.Server {
				continue // listed twice by one server
			}
			if !taken && f.conflicts[r.URI] == nil {
				f.ByURI[r.URI] = sf.Server
				resIndex[r.URI] = len(f.Resources)
				f.Resources = append(f.Resources, r)
				continue
			}
			if rcfg.Conflict == ResourceConflictError {
				if taken {
					f.conflicts[r.URI] = []string{prev}
					delete(f.ByURI, r.URI)
					f.Resources[resIndex[r.URI]] = nil
				}
				f.conflicts[r.URI] = append(f.conflicts[r.URI], sf.Server)
				f.Issues = append(f.Issues, Problem{sf.Server, r.URI, fmt.Errorf(
					"resource %q is served by servers %q; with resources.conflict = \"error\" none of them serves it", r.URI, f.conflicts[r.URI])})
				continue
			}
			f.Issues = append(f.Issues, Problem{sf.Server, r.URI, fmt.Errorf(
				"resource %q is also served by server %q, which comes first in the config and serves it", r.URI, prev)})
		}
		for _, t := range sortedBy(sf.Templates, func(t *mcp.ResourceTemplate) string { return t.URITemplate }) {
			t = extensions.ExposeTemplate(sf.Server, t)
			tmpl, err := uritemplate.New(t.URITemplate)
			if err != nil {
				f.Issues = append(f.Issues, Problem{sf.Server, t.URITemplate, fmt.Errorf("resource template %q is not a valid URI template: %v; it is hidden", t.URITemplate, err)})
				continue
			}
			if prev, taken := tmplOwner[t.URITemplate]; taken {
				if prev != sf.Server {
					f.Issues = append(f.Issues, Problem{sf.Server, t.URITemplate, fmt.Errorf(
						"resource template %q is also served by server %q, which comes first in the config", t.URITemplate, prev)})
				}
				continue
			}
			tmplOwner[t.URITemplate] = sf.Server
			f.Templates = append(f.Templates, t)
			f.matchers = append(f.matchers, templateRoute{server: sf.Server, re: tmpl.Regexp()})
		}
	}
	// Resources hidden by a conflict leave holes.
	kept := f.Resources[:0]
	for _, r := range f.Resources {
		if r != nil {
			kept = append(kept, r)
		}
	}
	f.Resources = kept
	// The prints cover which server serves each entry too: policies judge
	// entries by server, and their answers are cached by print.
	promptServers := make(map[string]string, len(f.PromptRoutes))
	for name, r := range f.PromptRoutes {
		promptServers[name] = r.Server
	}
	f.PromptPrint = jsonPrint([]any{f.Prompts, promptServers})
	f.ResPrint = jsonPrint([]any{f.Resources, f.Templates, f.ByURI, f.TemplateOwner})
	return f
}

func sortedBy[T any](items []*T, key func(*T) string) []*T {
	out := make([]*T, 0, len(items))
	for _, it := range items {
		if it != nil {
			out = append(out, it)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

func jsonPrint(v any) [32]byte {
	b, _ := json.Marshal(v)
	return sha256.Sum256(b)
}

// ResourceServer returns the server that serves uri: for an MCP Apps
// ui:// URI the server it names (host/extensions: mcphost exposes each
// server's under its name), else the one that listed it, else the first
// (config order) whose template matches it, else the only server offering
// resources at all. No other URI is parsed for a server name.
func (f *Features) ResourceServer(uri string) (string, error) {
	if server, _, ui := extensions.RouteURI(uri); ui {
		if server == "" || !slices.Contains(f.servers, server) {
			return "", mcp.ResourceNotFoundError(uri)
		}
		return server, nil
	}
	if s, ok := f.ByURI[uri]; ok {
		return s, nil
	}
	if servers := f.conflicts[uri]; servers != nil {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"resource %q is served by more than one server (%q) and resources.conflict is \"error\"", uri, servers)}
	}
	var match string
	for _, m := range f.matchers {
		if !m.re.MatchString(uri) {
			continue
		}
		if match == "" {
			match = m.server
			if f.conflict != ResourceConflictError {
				break
			}
			continue
		}
		if m.server != match {
			return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"resource %q matches templates of servers %q and %q and resources.conflict is \"error\"", uri, match, m.server)}
		}
	}
	if match != "" {
		return match, nil
	}
	if len(f.resServers) == 1 {
		return f.resServers[0], nil
	}
	return "", mcp.ResourceNotFoundError(uri)
}
