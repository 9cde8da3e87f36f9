// Package toolformat hands mcphost's catalog to model APIs: it turns the
// tools a caller sees (host.Tools, after policies) into OpenAI, Anthropic
// or Gemini tool definitions, each provider's name and schema rules
// respected, and maps the name a provider's tool call carries back to the
// exposed name that host.CallTool takes.
//
//	tools, _ := h.Tools(ctx, caller)
//	set, err := toolformat.Convert(toolformat.OpenAI, tools)
//	body := set.Definitions // the request's "tools"
//	...
//	name, ok := set.Exposed(call.Function.Name)
//	res, err := h.CallTool(ctx, caller, name, call.Function.Arguments)
package toolformat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"sync"

	"github.com/mcphost-project/mcphost/abi"
)

// Provider names a tool-definition format.
type Provider string

// The formats Convert writes.
const (
	// MCP is the tools as an MCP tools/list result lists them.
	MCP Provider = "mcp"
	// OpenAI is the Chat Completions "tools" array:
	// {"type":"function","function":{"name","description","parameters"}}.
	OpenAI Provider = "openai"
	// Anthropic is the Messages API "tools" array:
	// {"name","description","input_schema"}.
	Anthropic Provider = "anthropic"
	// Gemini is the generateContent "tools" array: one
	// {"functionDeclarations":[{"name","description","parameters"}]},
	// parameters in the OpenAPI subset Gemini takes.
	Gemini Provider = "gemini"
)

// Providers lists the formats, for flags and errors.
var Providers = []Provider{MCP, OpenAI, Anthropic, Gemini}

// maxProviderName is the longest function name OpenAI, Anthropic and
// Gemini accept.
const maxProviderName = 64

// providerName matches the names all three accept: OpenAI and Anthropic
// take ^[a-zA-Z0-9_-]{1,64}$; Gemini also wants a letter or '_' first,
// which every exposed name has (abi.ValidToolName). Compiled on first
// use: its program (the repeat unrolled 63 times) is some 60 KB that a
// config without tool formats never needs.
var providerName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)
})

// Set is a catalog converted for one provider.
type Set struct {
	Provider Provider
	// Definitions is the JSON to send as the request's tools.
	Definitions json.RawMessage
	// names maps a provider-side name to the exposed name.
	names map[string]string
}

// Names maps each provider-side name to the exposed name, for a caller
// that calls back through another process (the admin API's answer).
func (s *Set) Names() map[string]string { return maps.Clone(s.names) }

// Exposed returns the exposed name (for host.CallTool) of the tool a
// provider called by name.
func (s *Set) Exposed(name string) (string, bool) {
	n, ok := s.names[name]
	return n, ok
}

// Convert writes tools in provider's format. A name longer than a provider
// takes is cut and given a stable hash suffix (Exposed maps it back).
func Convert(p Provider, tools []abi.Tool) (*Set, error) {
	s := &Set{Provider: p, names: make(map[string]string, len(tools))}
	var defs []any
	for _, t := range tools {
		name := t.Name
		if p != MCP {
			name = providerSafe(t.Name)
		}
		if prev, dup := s.names[name]; dup {
			return nil, fmt.Errorf("toolformat: %s and %s are both %q for %s", prev, t.Name, name, p)
		}
		s.names[name] = t.Name
		schema, err := objectSchema(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("toolformat: %s: %w", t.Name, err)
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		switch p {
		case MCP:
			defs = append(defs, mcpTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema,
				OutputSchema: t.OutputSchema, Annotations: t.Annotations, Meta: t.Meta})
		case OpenAI:
			defs = append(defs, map[string]any{"type": "function", "function": map[string]any{"name": name, "description": desc, "parameters": schema}})
		case Anthropic:
			defs = append(defs, map[string]any{"name": name, "description": desc, "input_schema": schema})
		case Gemini:
			params, err := geminiSchema(schema)
			if err != nil {
				return nil, fmt.Errorf("toolformat: %s: %w", t.Name, err)
			}
			defs = append(defs, map[string]any{"name": name, "description": desc, "parameters": params})
		default:
			return nil, fmt.Errorf("toolformat: unknown provider %q (want one of %v)", p, Providers)
		}
	}
	if defs == nil {
		defs = []any{}
	}
	var out any = defs
	if p == Gemini {
		out = []any{map[string]any{"functionDeclarations": defs}}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	s.Definitions = b
	return s, nil
}

// mcpTool is a tool as an MCP tools/list result lists it.
type mcpTool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  map[string]any   `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *abi.Annotations `json:"annotations,omitempty"`
	Meta         json.RawMessage  `json:"_meta,omitempty"`
}

// providerSafe returns name if every provider takes it, else a cut of it
// with a stable hash of the whole: 55 characters, '_', 8 hex digits.
func providerSafe(name string) string {
	if providerName().MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	keep := min(len(name), maxProviderName-len(suffix))
	return name[:keep] + suffix
}

// objectSchema returns a tool's input schema as an object schema: every
// provider wants "type": "object" and a "properties" object, which MCP
// allows a server to leave out.
func objectSchema(raw json.RawMessage) (map[string]any, error) {
	var schema map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &schema); err != nil {
			return nil, fmt.Errorf("input schema is not a JSON object: %w", err)
		}
	}
	if schema == nil { // absent, or null
		schema = map[string]any{}
	}
	switch schema["type"] {
	case nil:
		schema["type"] = "object"
	case "object":
	default:
		return nil, fmt.Errorf("input schema is of type %v; a tool's is an object", schema["type"])
	}
	if _, ok := schema["properties"].(map[string]any); !ok {
		schema["properties"] = map[string]any{}
	}
	return schema, nil
}
