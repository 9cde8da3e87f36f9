package codemode

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
)

// Declarations returns TypeScript-like declarations of tools, as the
// script sees them, for the model: one `declare const tools: {...}`
// with a method per tool, its parameters typed from its input schema and
// its value from its output schema (unknown without one), each with the
// first sentence of its description. tools is the caller's view, after
// policies, so it declares what the script may call and nothing else.
func Declarations(tools []abi.Tool) string {
	var b strings.Builder
	b.WriteString("declare const tools: {\n")
	for i := range tools {
		t := &tools[i]
		if d := summary(t.Description, 160); d != "" {
			b.WriteString("  /** ")
			b.WriteString(d)
			b.WriteString(" */\n")
		}
		b.WriteString("  ")
		b.WriteString(member(t.Name))
		b.WriteString("(args")
		in := parseSchema(t.InputSchema)
		if len(in.Required) == 0 {
			b.WriteString("?")
		}
		b.WriteString(": ")
		b.WriteString(tsType(in, 0))
		b.WriteString("): ")
		if len(t.OutputSchema) > 0 {
			b.WriteString(tsType(parseSchema(t.OutputSchema), 0))
		} else {
			b.WriteString("unknown")
		}
		b.WriteString(";\n")
	}
	b.WriteString("};")
	return b.String()
}

// schema is the part of JSON Schema that declarations show.
type schema struct {
	Type        json.RawMessage    `json:"type"` // a name or a list of names
	Description string             `json:"description"`
	Properties  map[string]*schema `json:"properties"`
	Required    []string           `json:"required"`
	Items       *schema            `json:"items"`
	Enum        []json.RawMessage  `json:"enum"`
	Const       json.RawMessage    `json:"const"`
	AnyOf       []*schema          `json:"anyOf"`
	OneOf       []*schema          `json:"oneOf"`
	Additional  json.RawMessage    `json:"additionalProperties"`
}

// parseSchema decodes raw; a schema that does not decode declares as any.
func parseSchema(raw json.RawMessage) *schema {
	var s schema
	if len(raw) > 0 && json.Unmarshal(raw, &s) == nil {
		return &s
	}
	return &schema{}
}

// maxDepth bounds how deep declarations describe nested schemas; below
// it, a value is any.
const maxDepth = 4

// tsType is s as a TypeScript type.
func tsType(s *schema, depth int) string {
	if s == nil || depth > maxDepth {
		return "any"
	}
	switch {
	case len(s.Const) > 0:
		return literal(s.Const)
	case len(s.Enum) > 0:
		parts := make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			parts = append(parts, literal(e))
		}
		return strings.Join(parts, " | ")
	case len(s.AnyOf) > 0:
		return union(s.AnyOf, depth)
	case len(s.OneOf) > 0:
		return union(s.OneOf, depth)
	}
	var names []string
	if json.Unmarshal(s.Type, &names) != nil {
		var one string
		if json.Unmarshal(s.Type, &one) == nil {
			names = []string{one}
		}
	}
	if len(names) == 0 && s.Properties != nil {
		names = []string{"object"}
	}
	if len(names) == 0 {
		return "any"
	}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, typeNamed(n, s, depth))
	}
	return strings.Join(parts, " | ")
}

// literal is a JSON value as a TypeScript literal type, on one line.
func literal(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return "any"
	}
	return b.String()
}

func union(alts []*schema, depth int) string {
	parts := make([]string, 0, len(alts))
	for _, a := range alts {
		if p := tsType(a, depth+1); !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " | ")
}

// typeNamed is the TypeScript type of JSON Schema type n in s.
func typeNamed(n string, s *schema, depth int) string {
	switch n {
	case "string", "boolean", "null":
		return n
	case "number", "integer":
		return "number"
	case "array":
		t := tsType(s.Items, depth+1)
		if strings.ContainsAny(t, " |") {
			return "(" + t + ")[]"
		}
		return t + "[]"
	case "object":
		return objectType(s, depth)
	}
	return "any"
}

// objectType declares an object's properties in name order, required
// ones plain and the others optional, each with the start of its
// description.
func objectType(s *schema, depth int) string {
	if len(s.Properties) == 0 {
		var add schema
		if len(s.Additional) > 0 && json.Unmarshal(s.Additional, &add) == nil {
			return "Record<string, " + tsType(&add, depth+1) + ">"
		}
		return "{}"
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("{ ")
	for _, n := range names {
		p := s.Properties[n]
		b.WriteString(member(n))
		if !slices.Contains(s.Required, n) {
			b.WriteString("?")
		}
		b.WriteString(": ")
		b.WriteString(tsType(p, depth+1))
		if p != nil {
			if d := summary(p.Description, 60); d != "" {
				b.WriteString(" /* ")
				b.WriteString(d)
				b.WriteString(" */")
			}
		}
		b.WriteString("; ")
	}
	b.WriteString("}")
	return b.String()
}

// identifier matches names a declaration may write bare.
var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// member is name as a property name: bare when it can be, quoted
// otherwise (a tool name with '-').
func member(name string) string {
	if identifier.MatchString(name) {
		return name
	}
	b, _ := json.Marshal(name)
	return string(b)
}

// summary is the first sentence of a description, on one line, cut to
// at most n bytes, with nothing that would end a comment.
func summary(d string, n int) string {
	d = strings.Join(strings.Fields(d), " ")
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	d = strings.ReplaceAll(d, "*/", "* /")
	if len(d) > n {
		cut := n
		for cut > 0 && d[cut]&0xC0 == 0x80 {
			cut--
		}
		d = strings.TrimSpace(d[:cut]) + "…"
	}
	return d
}
