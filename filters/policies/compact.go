package policies

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// Defaults of builtin:compact, in characters.
const (
	DefaultCompactDescription      = 400
	DefaultCompactParamDescription = 160
)

// compact is builtin:compact: it shortens, in every tool definition, what
// a model does not need to choose and call the tool, and logs what it
// saved. Configuration:
//
//	max_description       = 400   # a tool's description, cut at the end of a sentence when it can be
//	max_param_description = 160   # each description inside the input and output schemas
//	examples              = false # keep the schemas' examples and the descriptions' example paragraphs
//	output_schemas        = true  # false drops outputSchema: models choose and call a tool by its
//	                              # input schema, but clients stop checking structuredContent against it
//
// It always drops "$schema" from the schemas, a tool's title that only
// repeats its name, and a schema property's title that only repeats the
// property's name (a generated "Max Results" for max_results).
type compact struct {
	maxDesc, maxParam int
	keepExamples      bool
	dropOutput        bool
}

func newCompact() pdk.Policy {
	c := &compact{}
	return pdk.Policy{
		Name:      "compact",
		Version:   Version,
		Configure: c.configure,
		ToolsList: c.toolsList,
		Hints:     func() abi.Hints { return abi.Hints{ListPerTool: true, IgnoresCaller: true} },
	}
}

func (c *compact) configure(cfg pdk.ConfigSource) error {
	var err error
	if c.maxDesc, err = positiveInt(cfg, "max_description", DefaultCompactDescription); err != nil {
		return err
	}
	if c.maxParam, err = positiveInt(cfg, "max_param_description", DefaultCompactParamDescription); err != nil {
		return err
	}
	if c.keepExamples, err = boolean(cfg, "examples", false); err != nil {
		return err
	}
	keepOutput, err := boolean(cfg, "output_schemas", true)
	c.dropOutput = !keepOutput
	return err
}

func (c *compact) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	before, after := 0, 0
	for i := range in.Tools {
		t := &in.Tools[i]
		before += toolSize(t)
		c.tool(t)
		after += toolSize(t)
	}
	if before > after {
		logf(pdk.LevelInfo, "compact: %d tools, %d bytes of titles, descriptions and schemas saved of %d (%d%%)",
			len(in.Tools), before-after, before, (before-after)*100/before)
	}
	return &abi.ToolsListOutput{Tools: in.Tools}, nil
}

// toolSize is the bytes of what compact may shorten in t.
func toolSize(t *abi.Tool) int {
	n := len(t.Title) + len(t.Description) + len(t.InputSchema) + len(t.OutputSchema)
	if t.Annotations != nil {
		n += len(t.Annotations.Title)
	}
	return n
}

func (c *compact) tool(t *abi.Tool) {
	if sameName(t.Title, t.Name) || sameName(t.Title, t.Tool) {
		t.Title = ""
	}
	if a := t.Annotations; a != nil && a.Title != "" && (sameName(a.Title, t.Name) || sameName(a.Title, t.Tool)) {
		cp := *a // the annotations may be shared with the catalog
		cp.Title = ""
		t.Annotations = &cp
	}
	t.Description = c.text(t.Description, c.maxDesc)
	if c.dropOutput {
		t.OutputSchema = nil
	}
	for _, s := range []*json.RawMessage{&t.InputSchema, &t.OutputSchema} {
		if len(*s) == 0 {
			continue
		}
		if out, changed, err := c.schema(*s, ""); err == nil && changed {
			*s = out
		}
	}
}

// text drops example paragraphs (unless kept) and fits s in budget
// characters: cut after the last sentence that fits when that keeps at
// least half the budget, else after the last word, with "…".
func (c *compact) text(s string, budget int) string {
	if !c.keepExamples && strings.Contains(s, "\n\n") {
		paras := strings.Split(s, "\n\n")
		kept := paras[:0]
		for _, p := range paras {
			if !isExample(p) {
				kept = append(kept, p)
			}
		}
		s = strings.Join(kept, "\n\n")
	}
	s = strings.TrimSpace(s)
	if runeCount(s) <= budget {
		return s
	}
	cut, _ := truncateRunes(s, budget, "")
	if end := lastSentenceEnd(cut); end >= len(cut)/2 {
		return strings.TrimSpace(cut[:end])
	}
	if sp := strings.LastIndexFunc(cut, unicode.IsSpace); sp > 0 {
		cut = cut[:sp]
	}
	short, _ := truncateRunes(strings.TrimRightFunc(cut, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }), budget-1, "")
	return short + "…"
}

// isExample reports whether a paragraph of a description is an example.
func isExample(p string) bool {
	p = strings.ToLower(strings.TrimLeft(p, " \t\n#*-"))
	return strings.HasPrefix(p, "example") || strings.HasPrefix(p, "for example") || strings.HasPrefix(p, "usage example")
}

// lastSentenceEnd returns the index just past the last ". ", "! ", "? " or
// line break in s (and its end when s ends a sentence), or -1.
func lastSentenceEnd(s string) int {
	end := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', '!', '?':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' {
				end = i + 1
			}
		case '\n':
			end = i
		}
	}
	return end
}

// sameName reports whether a title only repeats a name: the same letters
// and digits, whatever the case and separators ("Max Results",
// "max_results", "maxResults").
func sameName(title, name string) bool {
	if title == "" || name == "" {
		return false
	}
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return unicode.ToLower(r)
			}
			return -1
		}, s)
	}
	n := norm(title)
	return n != "" && n == norm(name)
}

// Schema keywords by what their values hold: a map of names to schemas, a
// schema, or a list of schemas. The other keywords' values are left alone
// (enum, const, default and the like hold data).
var (
	schemaMaps  = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true}
	schemaOne   = map[string]bool{"items": true, "additionalProperties": true, "not": true, "if": true, "then": true, "else": true, "contains": true, "propertyNames": true, "additionalItems": true, "unevaluatedProperties": true, "unevaluatedItems": true}
	schemaLists = map[string]bool{"anyOf": true, "oneOf": true, "allOf": true, "prefixItems": true}
)

// schema compacts one JSON Schema (name is its property's name, or ""),
// editing only what it changes: the rest keeps its bytes and order.
func (c *compact) schema(raw json.RawMessage, name string) (json.RawMessage, bool, error) {
	o, err := parseObject(raw)
	if err != nil {
		return raw, false, nil // true, false, or not a schema: as it is
	}
	out, changed := make(object, 0, len(o)), false
	for _, m := range o {
		v, drop, ch, err := c.member(m, name)
		if err != nil {
			return raw, false, err
		}
		changed = changed || ch || drop
		if !drop {
			out = append(out, member{Key: m.Key, Value: v})
		}
	}
	if !changed {
		return raw, false, nil
	}
	return out.raw(), true, nil
}

// member compacts one member of a schema: its new value, or drop.
func (c *compact) member(m member, name string) (v json.RawMessage, drop, changed bool, err error) {
	var s string
	switch {
	case m.Key == "$schema", !c.keepExamples && (m.Key == "examples" || m.Key == "example"):
		return nil, true, false, nil
	case m.Key == "title" && json.Unmarshal(m.Value, &s) == nil:
		return m.Value, sameName(s, name), false, nil
	case m.Key == "description" && json.Unmarshal(m.Value, &s) == nil:
		if short := c.text(s, c.maxParam); short != s {
			return mustJSON(short), false, true, nil
		}
	case schemaOne[m.Key]:
		v, changed, err = c.schema(m.Value, "")
		return v, false, changed, err
	case schemaMaps[m.Key]:
		return c.eachSchema(m.Value, true)
	case schemaLists[m.Key]:
		return c.eachSchema(m.Value, false)
	}
	return m.Value, false, false, nil
}

// eachSchema compacts the schemas of a map (named: each by its name) or
// of a list.
func (c *compact) eachSchema(raw json.RawMessage, named bool) (json.RawMessage, bool, bool, error) {
	if named {
		o, err := parseObject(raw)
		if err != nil {
			return raw, false, false, nil
		}
		changed := false
		for i, m := range o {
			v, ch, err := c.schema(m.Value, m.Key)
			if err != nil {
				return raw, false, false, err
			}
			if ch {
				o[i].Value, changed = v, true
			}
		}
		if !changed {
			return raw, false, false, nil
		}
		return o.raw(), false, true, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return raw, false, false, nil
	}
	changed := false
	for i := range list {
		v, ch, err := c.schema(list[i], "")
		if err != nil {
			return raw, false, false, err
		}
		if ch {
			list[i], changed = v, true
		}
	}
	if !changed {
		return raw, false, false, nil
	}
	return mustJSON(list), false, true, nil
}
