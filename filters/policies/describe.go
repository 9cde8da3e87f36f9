package policies

import (
	"encoding/json"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// Limits LLM platforms impose on tool definitions, in characters.
const (
	MaxDescription      = 2000
	MaxParamDescription = 5000
)

// DefaultMarker ends text that builtin:describe and builtin:truncate cut.
const DefaultMarker = "… [truncated]"

// describe is builtin:describe: description prefixes and overrides, and the
// length limits of LLM platforms. Configuration:
//
//	prefix    = "[{server}] "   # placeholders {server} {tool} {name}
//	suffix    = ""
//	overrides = { "clock__current_time" = "Tells the time." } # placeholders too
//	on_limit  = "truncate"      # or "hide"
//	max_description       = 2000
//	max_param_description = 5000
//	max_title             = 200
//	marker    = "… [truncated]"
type describe struct {
	prefix, suffix string
	overrides      map[string]string
	hide           bool
	maxDesc        int
	maxParam       int
	maxTitle       int
	marker         string
}

func newDescribe() pdk.Policy {
	d := &describe{}
	return pdk.Policy{
		Name:      "describe",
		Version:   Version,
		Configure: d.configure,
		ToolsList: d.toolsList,
		Hints:     func() abi.Hints { return abi.Hints{ListPerTool: true, IgnoresCaller: true} },
	}
}

func (d *describe) configure(cfg pdk.ConfigSource) error {
	var err error
	d.prefix = cfg.String("prefix", "")
	d.suffix = cfg.String("suffix", "")
	d.marker = cfg.String("marker", DefaultMarker)
	if d.overrides, err = stringMap(cfg, "overrides"); err != nil {
		return err
	}
	mode, err := enum(cfg, "on_limit", "truncate", "hide")
	if err != nil {
		return err
	}
	d.hide = mode == "hide"
	if d.maxDesc, err = positiveInt(cfg, "max_description", MaxDescription); err != nil {
		return err
	}
	if d.maxParam, err = positiveInt(cfg, "max_param_description", MaxParamDescription); err != nil {
		return err
	}
	d.maxTitle, err = positiveInt(cfg, "max_title", MaxTitle)
	return err
}

// expand fills the placeholders of a prefix or suffix for one tool.
func expand(tmpl string, t *abi.Tool) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	return strings.NewReplacer("{server}", t.Server, "{tool}", t.Tool, "{name}", t.Name).Replace(tmpl)
}

func (d *describe) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	out := &abi.ToolsListOutput{Tools: make([]abi.Tool, 0, len(in.Tools))}
	for _, t := range in.Tools {
		if over, ok := d.overrides[t.Name]; ok {
			t.Description = expand(over, &t)
		}
		if d.prefix != "" || d.suffix != "" {
			desc := expand(d.prefix, &t) + t.Description + expand(d.suffix, &t)
			if t.Description == "" {
				desc = strings.TrimSpace(desc)
			}
			t.Description = desc
		}
		if over := d.fit(&t); over != "" {
			if d.hide {
				logf(pdk.LevelInfo, "hiding %s: its %s", t.Name, over)
				continue
			}
		}
		out.Tools = append(out.Tools, t)
	}
	return out, nil
}

// fit enforces the limits on t: it truncates (unless hiding) and returns
// what was over a limit, or "".
func (d *describe) fit(t *abi.Tool) string {
	over := ""
	if s, cut := truncateRunes(t.Description, d.maxDesc, d.marker); cut {
		over = "description is over " + itoa(d.maxDesc) + " characters"
		t.Description = s
	}
	if s, cut := truncateRunes(t.Title, d.maxTitle, d.marker); cut {
		if over == "" {
			over = "title is over " + itoa(d.maxTitle) + " characters"
		}
		t.Title = s
	}
	// A description is never longer in characters than the schema is in
	// bytes: short schemas (nearly all) need no parsing.
	if len(t.InputSchema) > d.maxParam {
		schema, cut, err := d.fitSchema(t.InputSchema)
		if err == nil && cut {
			if over == "" {
				over = "input schema has a description over " + itoa(d.maxParam) + " characters"
			}
			t.InputSchema = schema
		}
	}
	return over
}

// notSchemas are schema keywords whose values are data, not schemas: a
// "description" inside them is not a description.
var notSchemas = map[string]bool{"default": true, "examples": true, "const": true, "enum": true, "example": true}

// fitSchema truncates every "description" string inside a JSON Schema. It
// edits only what it cuts; the rest keeps its bytes and order.
func (d *describe) fitSchema(raw json.RawMessage) (json.RawMessage, bool, error) {
	t := strings.TrimSpace(string(raw))
	if t == "" {
		return raw, false, nil
	}
	switch t[0] {
	case '{':
		o, err := parseObject(raw)
		if err != nil {
			return raw, false, err
		}
		changed := false
		for i, m := range o {
			if notSchemas[m.Key] {
				continue
			}
			if m.Key == "description" {
				var s string
				if json.Unmarshal(m.Value, &s) == nil {
					if cut, ok := truncateRunes(s, d.maxParam, d.marker); ok {
						o[i].Value, changed = mustJSON(cut), true
					}
					continue
				}
			}
			v, c, err := d.fitSchema(m.Value)
			if err != nil {
				return raw, false, err
			}
			if c {
				o[i].Value, changed = v, true
			}
		}
		if !changed {
			return raw, false, nil
		}
		return o.raw(), true, nil
	case '[':
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return raw, false, err
		}
		changed := false
		for i := range list {
			v, c, err := d.fitSchema(list[i])
			if err != nil {
				return raw, false, err
			}
			if c {
				list[i], changed = v, true
			}
		}
		if !changed {
			return raw, false, nil
		}
		return mustJSON(list), true, nil
	}
	return raw, false, nil
}
