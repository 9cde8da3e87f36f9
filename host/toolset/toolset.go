// Package toolset holds the toolsets: named subsets of the catalog, each
// served at its own endpoint (/mcp/NAME, and /sse/NAME where the gateway
// serves SSE), so that a team, an IDE or one agent connects to exactly
// the tools it needs. A toolset picks tools by server and by glob; what a
// caller sees of it is what it would see on /mcp (its identity, its
// policies), less what the toolset leaves out.
//
// The package is a leaf: it knows tools by their server and their name
// at that server, and the gateway applies it (host/gateway's view.go and
// its endpoint in serve.go).
package toolset

import (
	"context"
	"fmt"
	"iter"
	"path"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/glob"
)

// Exposures: how an endpoint lists the tools it serves.
const (
	// ExposureList lists every tool (the default); the name is tools
	// { exposure }'s.
	ExposureList = "list"
	// ExposureSearch lists a search tool and the Always tools; the others
	// stay callable by name.
	ExposureSearch = "search"
	// ExposureCode lists a tool that runs a script calling the others.
	ExposureCode = "code"
)

// Exposures are the values Exposure takes, in the order the docs give them.
var Exposures = []string{ExposureList, ExposureSearch, ExposureCode}

// Toolset is one toolset. Empty lists pick everything: a toolset with no
// servers and no tools serves the whole catalog (under its own exposure).
type Toolset struct {
	Name string
	// Description says what the toolset is for (the console, provider
	// formats).
	Description string
	// Servers are the servers whose tools it takes (by name; every server
	// when empty).
	Servers []string
	// Tools are globs ("*" matches any run of characters) over a tool's
	// name at its server; a tool is taken when one matches (every tool of
	// Servers when empty).
	Tools []string
	// Exclude are globs as Tools: a tool one matches is left out, even
	// when Tools takes it.
	Exclude []string
	// Exposure is one of Exposures ("" reads as ExposureList).
	Exposure string
	// Always are the tools listed whatever the exposure (beside the
	// search or code tools): exposed names, or path.Match patterns over
	// them, as tools { always } takes.
	Always []string
}

// Problem is one thing wrong with a Toolset: the field, by its name in
// the config, and what is wrong.
type Problem struct {
	Field  string
	Detail string
}

func (p Problem) Error() string { return p.Field + ": " + p.Detail }

// CheckName checks a toolset's name: 1 to 64 letters, digits, '-', '_'
// and '.', as it is a segment of the endpoint's URL path.
func CheckName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("a toolset's name is 1 to 64 characters, got %d", len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("a toolset's name is letters, digits, '-', '_' and '.'; %q has %q", name, r)
		}
	}
	if name == "." || name == ".." {
		return fmt.Errorf("a toolset cannot be named %q (a URL path would read it as a directory)", name)
	}
	return nil
}

// Check reports every problem of t (its name apart: CheckName).
func (t Toolset) Check() []Problem {
	var ps []Problem
	if t.Exposure != "" && !slices.Contains(Exposures, t.Exposure) {
		ps = append(ps, Problem{"exposure", fmt.Sprintf("exposure must be %q, %q or %q, not %q", ExposureList, ExposureSearch, ExposureCode, t.Exposure)})
	}
	for _, f := range []struct {
		field string
		list  []string
	}{{"servers", t.Servers}, {"tools", t.Tools}, {"exclude", t.Exclude}, {"always", t.Always}} {
		if slices.Contains(f.list, "") {
			ps = append(ps, Problem{f.field, f.field + " holds an empty string, which matches nothing; remove it"})
		}
	}
	for _, p := range t.Always {
		if _, err := path.Match(p, ""); err != nil {
			ps = append(ps, Problem{"always", fmt.Sprintf("%q is not a pattern path.Match reads (write an exposed name, or * ? [a-z] around it)", p)})
			break
		}
	}
	if len(t.Always) > 0 && t.exposure() == ExposureList {
		ps = append(ps, Problem{"always", fmt.Sprintf("always names the tools listed beside the search or code tool; with exposure %q every tool is listed: set exposure, or remove always", ExposureList)})
	}
	return ps
}

// WithDefaults returns t with Exposure set.
func (t Toolset) WithDefaults() Toolset {
	t.Exposure = t.exposure()
	return t
}

func (t *Toolset) exposure() string {
	if t.Exposure == "" {
		return ExposureList
	}
	return t.Exposure
}

// Includes reports whether t takes the tool named tool at server. A nil
// toolset (the whole of /mcp) takes every tool.
func (t *Toolset) Includes(server, tool string) bool {
	if t == nil {
		return true
	}
	if len(t.Servers) > 0 && !slices.Contains(t.Servers, server) {
		return false
	}
	if len(t.Tools) > 0 && !anyMatch(t.Tools, tool) {
		return false
	}
	return !anyMatch(t.Exclude, tool)
}

// IsAlways reports whether t lists the tool of exposed name name whatever
// its exposure.
func (t *Toolset) IsAlways(name string) bool {
	if t == nil {
		return false
	}
	for _, p := range t.Always {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Serves returns the servers whose prompts and resources t serves: its
// Servers, or without them every server with a tool it takes (of tools,
// the catalog's, as server and name at the server), or every server when
// it picks no tools either (all).
func (t *Toolset) Serves(tools iter.Seq2[string, string]) (servers map[string]bool, all bool) {
	switch {
	case t == nil || len(t.Servers) == 0 && len(t.Tools) == 0:
		return nil, true
	case len(t.Servers) > 0:
		servers = make(map[string]bool, len(t.Servers))
		for _, s := range t.Servers {
			servers[s] = true
		}
		return servers, false
	}
	servers = map[string]bool{}
	for server, tool := range tools {
		if !servers[server] && t.Includes(server, tool) {
			servers[server] = true
		}
	}
	return servers, false
}

func anyMatch(patterns []string, s string) bool {
	for _, p := range patterns {
		if Match(p, s) {
			return true
		}
	}
	return false
}

// Match reports whether the glob pattern, in which "*" matches any run of
// characters, matches s, as the globs of quotas do (host/internal/glob).
func Match(pattern, s string) bool { return glob.Match(pattern, s) }

type ctxKey struct{}

// NewContext returns ctx carrying t: the toolset whose endpoint a request
// came to.
func NewContext(ctx context.Context, t *Toolset) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the toolset NewContext put in ctx, or nil (the
// request came to /mcp itself).
func FromContext(ctx context.Context) *Toolset {
	t, _ := ctx.Value(ctxKey{}).(*Toolset)
	return t
}

// CheckAll reports the problems of every toolset of a configuration, each
// error naming it, and names used twice.
func CheckAll(ts []Toolset) []error {
	var errs []error
	seen := make(map[string]bool, len(ts))
	for i, t := range ts {
		where := fmt.Sprintf("toolset %d (%q)", i, t.Name)
		if err := CheckName(t.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate toolset name", where))
		}
		seen[t.Name] = true
		for _, p := range t.Check() {
			errs = append(errs, fmt.Errorf("%s: %w", where, p))
		}
	}
	return errs
}

// Keep returns the entries of all (prompts, resources, templates) whose
// server, as server tells, t serves (Serves, over tools); all itself for
// a nil t.
func Keep[T any](t *Toolset, tools iter.Seq2[string, string], all []*T, server func(*T) string) []*T {
	servers, every := t.Serves(tools)
	if every {
		return all
	}
	out := make([]*T, 0, len(all))
	for _, v := range all {
		if servers[server(v)] {
			out = append(out, v)
		}
	}
	return out
}

// Named returns the toolset of ts called name, or nil.
func Named(ts []Toolset, name string) *Toolset {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

// Pick returns the indexes of the tools of a caller's view that t takes,
// and the exposed names of those it lists whatever its exposure.
func (t *Toolset) Pick(tools []abi.Tool) (keep []int, always []string) {
	for i, tool := range tools {
		if t.Includes(tool.Server, tool.Tool) {
			keep = append(keep, i)
			if t.IsAlways(tool.Name) {
				always = append(always, tool.Name)
			}
		}
	}
	return keep, always
}

// WithDefaults returns a copy of ts, each with its defaults.
func WithDefaults(ts []Toolset) []Toolset {
	out := make([]Toolset, len(ts))
	for i, t := range ts {
		out[i] = t.WithDefaults()
	}
	return out
}

// Enter returns ctx carrying the toolset of ts called name (NewContext),
// or a JSON-RPC error for its endpoint's client when there is none (it
// was removed while the client was connected).
func Enter(ctx context.Context, ts []Toolset, name string) (context.Context, error) {
	t := Named(ts, name)
	if t == nil {
		return ctx, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("toolset %q was removed; connect to another endpoint", name)}
	}
	return NewContext(ctx, t), nil
}
