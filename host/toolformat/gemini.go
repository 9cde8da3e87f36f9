package toolformat

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Gemini's function parameters are an OpenAPI 3.0 Schema object, a subset
// of JSON Schema: no $ref, no additionalProperties, no const, no type
// arrays. geminiSchema rewrites a JSON Schema into it: local references
// are inlined (bounded, so a recursive schema ends in an open object),
// ["T", "null"] becomes T with nullable, const an enum of one, and keys
// Gemini does not know are dropped.

// geminiKeys are the Schema fields Gemini takes, and what each holds.
var geminiKeys = map[string]byte{
	"type": 'v', "format": 'v', "title": 'v', "description": 'v', "nullable": 'v', "enum": 'v',
	"maxItems": 'v', "minItems": 'v', "minProperties": 'v', "maxProperties": 'v', "minLength": 'v',
	"maxLength": 'v', "pattern": 'v', "example": 'v', "default": 'v', "minimum": 'v', "maximum": 'v',
	"required": 'v', "propertyOrdering": 'v',
	"properties": 'm', // name -> schema
	"items":      's', // schema
	"anyOf":      'l', // list of schemas
}

// geminiFormats are the formats Gemini's Schema lists: float and double for
// numbers, int32 and int64 for integers, enum and date-time for strings.
var geminiFormats = []string{"float", "double", "int32", "int64", "enum", "date-time"}

func geminiFormat(v any) bool {
	s, ok := v.(string)
	return ok && slices.Contains(geminiFormats, s)
}

// maxRefDepth bounds how deep references are inlined.
const maxRefDepth = 8

func geminiSchema(schema map[string]any) (map[string]any, error) {
	defs := map[string]any{}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := schema[k].(map[string]any); ok {
			for name, v := range d {
				defs["#/"+k+"/"+name] = v
			}
		}
	}
	out, err := geminiNode(schema, defs, 0)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	return m, nil
}

func geminiNode(v any, defs map[string]any, depth int) (any, error) {
	node, ok := v.(map[string]any)
	if !ok {
		// true (anything) and false have no OpenAPI form: an open object.
		return map[string]any{"type": "object"}, nil
	}
	if ref, ok := node["$ref"].(string); ok {
		target, found := defs[ref]
		if !found {
			if !strings.HasPrefix(ref, "#/") {
				return nil, fmt.Errorf("schema reference %q is not local to the schema", ref)
			}
			return nil, fmt.Errorf("schema reference %q names nothing in the schema", ref)
		}
		if depth >= maxRefDepth {
			return map[string]any{"type": "object"}, nil
		}
		return geminiNode(target, defs, depth+1)
	}
	out := map[string]any{}
	for k, val := range node {
		if k == "format" && !geminiFormat(val) {
			continue // a JSON Schema format Gemini does not list (uri, email, ...)
		}
		switch geminiKeys[k] {
		case 'v':
			out[k] = val
		case 's':
			sub, err := geminiNode(val, defs, depth)
			if err != nil {
				return nil, err
			}
			out[k] = sub
		case 'm':
			props, ok := val.(map[string]any)
			if !ok {
				continue
			}
			m := make(map[string]any, len(props))
			for name, p := range props {
				sub, err := geminiNode(p, defs, depth)
				if err != nil {
					return nil, err
				}
				m[name] = sub
			}
			out[k] = m
		case 'l':
			list, ok := val.([]any)
			if !ok {
				continue
			}
			l := make([]any, 0, len(list))
			for _, p := range list {
				sub, err := geminiNode(p, defs, depth)
				if err != nil {
					return nil, err
				}
				l = append(l, sub)
			}
			out[k] = l
		}
	}
	if c, ok := node["const"]; ok {
		out["enum"] = []any{c}
	}
	if one, ok := node["oneOf"].([]any); ok && out["anyOf"] == nil {
		// Gemini has anyOf only; exactly-one becomes at-least-one.
		sub, err := geminiNode(map[string]any{"anyOf": one}, defs, depth)
		if err != nil {
			return nil, err
		}
		out["anyOf"] = sub.(map[string]any)["anyOf"]
	}
	if types, ok := node["type"].([]any); ok {
		var kept []string
		for _, t := range types {
			if s, ok := t.(string); ok && s != "null" {
				kept = append(kept, s)
			} else if s == "null" {
				out["nullable"] = true
			}
		}
		switch len(kept) {
		case 0:
			delete(out, "type")
		case 1:
			out["type"] = kept[0]
		default:
			// Several types: anyOf one schema per type.
			delete(out, "type")
			var alts []any
			for _, t := range kept {
				alts = append(alts, map[string]any{"type": t})
			}
			out["anyOf"] = alts
		}
	}
	if t, ok := out["type"].(string); ok && t == "null" {
		delete(out, "type")
		out["nullable"] = true
	}
	if e, ok := out["enum"].([]any); ok {
		geminiEnum(out, e)
	}
	return out, nil
}

// geminiEnum rewrites an enum for Gemini, whose enums are of strings only:
// a string enum stays; null members become nullable; any other value
// cannot be written as Gemini wants without changing the argument's type
// (the model would send "1" for 1), so the enum goes and the allowed
// values are said in the description instead.
func geminiEnum(out map[string]any, values []any) {
	var strs, others []any
	for _, v := range values {
		switch v := v.(type) {
		case nil:
			out["nullable"] = true
		case string:
			strs = append(strs, v)
		default:
			others = append(others, v)
		}
	}
	if len(others) == 0 && len(strs) > 0 {
		out["enum"], out["type"] = strs, "string"
		return
	}
	delete(out, "enum")
	var said []string
	for _, v := range values {
		if v != nil {
			b, _ := json.Marshal(v)
			said = append(said, string(b))
		}
	}
	if len(said) > 0 {
		desc, _ := out["description"].(string)
		if desc != "" {
			desc += " "
		}
		out["description"] = desc + "One of: " + strings.Join(said, ", ") + "."
	}
}
