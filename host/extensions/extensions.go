// Package extensions carries MCP extensions (SEP-1724: the `extensions`
// member of client and server capabilities) across the gateway, which is a
// server to its clients and a client to its upstreams, so neither side of
// it looks as if it supported none.
//
// Only the extensions in carried pass: mcphost can forward an extension only
// if it understands what the extension adds to the protocol (new methods,
// new fields that name things it renames), so an unknown one is dropped in
// both directions rather than advertised and then broken. A new extension
// plugs in with a Carrier value in carried (and, where it renames things,
// the rewriting beside it, as apps.go does for MCP Apps).
//
// The rules, per direction (docs/RATIONALE.md says why):
//   - to clients (ForClients): an extension offered by the upstreams, merged
//     by its Carrier's Merge: Union for extensions whose marks travel on the
//     items they concern (a tool's _meta.ui), Intersection for those that
//     change every request a client sends;
//   - to an upstream session of one client (ForClient): what that client
//     declared, intersected with what mcphost carries;
//   - to a shared upstream session (Shared): what some client may declare,
//     as for sampling and elicitation, since which client a request comes
//     from is known only when it arrives.
package extensions

import (
	"maps"
	"slices"
)

// Merge says how the offers of several upstreams become one offer to
// clients.
type Merge int

const (
	// Union offers the extension when any upstream offers it: each item a
	// client sees still carries its own upstream's marks, and items of
	// upstreams without the extension simply carry none.
	Union Merge = iota
	// Intersection offers it only when every upstream that reported its
	// capabilities offers it: for extensions that change how a client
	// must speak to the server as a whole.
	Intersection
)

// Carrier is what mcphost knows of one extension.
type Carrier struct {
	// Name is the extension's identifier ("{vendor-prefix}/{name}").
	Name string
	// Merge combines the upstreams' offers for clients.
	Merge Merge
	// Gateway, when not nil, is offered to clients whatever the upstreams
	// offer: for an extension mcphost implements itself. Upstreams' offers
	// merge into it.
	Gateway map[string]any
	// Shared is what a shared upstream session declares for the extension
	// (nil: none). It stands for every client the session may serve.
	Shared map[string]any
	// Client narrows a client's settings to what mcphost can carry to an
	// upstream; nil passes them as they are.
	Client func(settings map[string]any) map[string]any
}

// carried are the extensions mcphost forwards, each with its rules.
var carried = []Carrier{apps}

// Carried returns the identifiers of the extensions mcphost forwards.
func Carried() []string {
	names := make([]string, len(carried))
	for i, c := range carried {
		names[i] = c.Name
	}
	return names
}

func carrierOf(name string) (Carrier, bool) {
	for _, c := range carried {
		if c.Name == name {
			return c, true
		}
	}
	return Carrier{}, false
}

// ForClients is what the gateway offers its clients, from what each
// upstream that reported capabilities offered (nil entries are upstreams
// that offered no extension), or nil when that is nothing.
func ForClients(upstreams []map[string]any) map[string]any {
	var out map[string]any
	for _, c := range carried {
		var offers []map[string]any
		missing := false
		for _, ext := range upstreams {
			s, ok := ext[c.Name]
			if !ok {
				missing = true
				continue
			}
			offers = append(offers, settingsOf(s))
		}
		if c.Gateway != nil {
			offers = append([]map[string]any{c.Gateway}, offers...)
		} else if len(offers) == 0 || (c.Merge == Intersection && missing) {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[c.Name] = mergeSettings(offers)
	}
	return out
}

// ForClient is what an upstream session that serves one client declares:
// the extensions the client declared that mcphost carries, with the
// settings the Carrier lets through. Nil when none.
func ForClient(client map[string]any) map[string]any {
	var out map[string]any
	for name, s := range client {
		c, ok := carrierOf(name)
		if !ok {
			continue
		}
		settings := settingsOf(s)
		if c.Client != nil {
			if settings = c.Client(settings); settings == nil {
				continue
			}
		}
		if out == nil {
			out = map[string]any{}
		}
		out[name] = settings
	}
	return out
}

// Shared is what a shared upstream session declares. Nil when nothing.
func Shared() map[string]any {
	var out map[string]any
	for _, c := range carried {
		if c.Shared == nil {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[c.Name] = maps.Clone(c.Shared)
	}
	return out
}

// settingsOf reads an extension's settings: an object, or (for a peer that
// sent null or something else) an empty one, as the spec asks for.
func settingsOf(v any) map[string]any {
	if m, ok := v.(map[string]any); ok && m != nil {
		return m
	}
	return map[string]any{}
}

// mergeSettings merges the settings of several offers of one extension:
// lists of strings are united (first seen first), booleans or'ed, and any
// other member keeps the first offer's value.
func mergeSettings(offers []map[string]any) map[string]any {
	out := maps.Clone(offers[0])
	for _, o := range offers[1:] {
		for k, v := range o {
			prev, ok := out[k]
			if !ok {
				out[k] = v
				continue
			}
			if a, b, ok := stringLists(prev, v); ok {
				for _, s := range b {
					if !slices.Contains(a, s) {
						a = append(a, s)
					}
				}
				out[k] = toAny(a)
				continue
			}
			if a, ok := prev.(bool); ok {
				if b, ok := v.(bool); ok {
					out[k] = a || b
				}
			}
			// Anything else: the first offer's value stands.
		}
	}
	return out
}

// stringLists reads a and b as lists of strings (as JSON decodes them).
func stringLists(a, b any) ([]string, []string, bool) {
	x, ok1 := stringList(a)
	y, ok2 := stringList(b)
	return x, y, ok1 && ok2
}

func stringList(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		return slices.Clone(l), true
	case []any:
		out := make([]string, 0, len(l))
		for _, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

func toAny(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}
