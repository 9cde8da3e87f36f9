package policies

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// arguments is builtin:arguments: parameter-level rewriting. Configuration
// (keys are globs over the exposed tool name; entries apply in order, a
// later one winning for the same parameter):
//
//	fixed    = { "files__read_file" = { root = "/srv" } }
//	           # the parameter disappears from the schema and always has this value
//	defaults = { "search__*" = { limit = 20 } }
//	           # the schema shows the default and no longer requires the
//	           # parameter; a call without it gets the default
//
// Only top-level parameters (properties of the input schema) are handled.
// The caller condition (callerCondition) picks the callers whose listings
// and calls are rewritten; others pass untouched.
type arguments struct {
	fixed    []paramRule
	defaults []paramRule
	callers  callerCondition
}

type paramRule struct {
	tools  glob
	values object
}

func newArguments() pdk.Policy {
	a := &arguments{}
	return pdk.Policy{
		Name:      "arguments",
		Version:   Version,
		Configure: a.configure,
		ToolsList: a.toolsList,
		ToolCall:  a.toolCall,
		// tool_call rewrites the arguments, so only listings are reused;
		// across callers unless a caller condition is set.
		Hints: func() abi.Hints {
			return abi.Hints{ListPerTool: true, IgnoresCaller: !a.callers.dependsOnCaller()}
		},
	}
}

func (a *arguments) configure(cfg pdk.ConfigSource) error {
	if err := a.callers.configure(cfg); err != nil {
		return err
	}
	var err error
	if a.fixed, err = paramRules(cfg, "fixed"); err != nil {
		return err
	}
	if a.defaults, err = paramRules(cfg, "defaults"); err != nil {
		return err
	}
	if len(a.fixed) == 0 && len(a.defaults) == 0 {
		return fmt.Errorf(`set "fixed" or "defaults", like fixed = { "files__read_file" = { root = "/srv" } }`)
	}
	return nil
}

func paramRules(cfg pdk.ConfigSource, key string) ([]paramRule, error) {
	o, ok, err := objectOf(cfg, key)
	if !ok || err != nil {
		return nil, err
	}
	rules := make([]paramRule, 0, len(o))
	for _, m := range o {
		g, err := compileGlob(m.Key)
		if err != nil {
			return nil, fmt.Errorf("config %q: %v", key, err)
		}
		values, err := parseObject(m.Value)
		if err != nil {
			return nil, fmt.Errorf("config %q: %q: want an object of parameter values, like { root = \"/srv\" }", key, m.Key)
		}
		rules = append(rules, paramRule{tools: g, values: values})
	}
	return rules, nil
}

// valuesFor merges the values of the rules matching name, in order.
func valuesFor(rules []paramRule, name string) object {
	var out object
	for _, r := range rules {
		if r.tools.match(name) {
			for _, m := range r.values {
				out.set(m.Key, m.Value)
			}
		}
	}
	return out
}

func (a *arguments) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	if !a.callers.applies(&in.Caller) {
		return &abi.ToolsListOutput{Tools: in.Tools}, nil
	}
	for i := range in.Tools {
		t := &in.Tools[i]
		fixed, defaults := valuesFor(a.fixed, t.Name), valuesFor(a.defaults, t.Name)
		if len(fixed) == 0 && len(defaults) == 0 {
			continue
		}
		schema, err := editSchema(t.InputSchema, fixed, defaults)
		if err != nil {
			return nil, fmt.Errorf("%s: input schema: %v", t.Name, err)
		}
		t.InputSchema = schema
	}
	return &abi.ToolsListOutput{Tools: in.Tools}, nil
}

// editSchema hides the fixed parameters and records the defaults.
func editSchema(raw json.RawMessage, fixed, defaults object) (json.RawMessage, error) {
	schema, err := parseObject(raw)
	if err != nil {
		return nil, err
	}
	if len(schema) == 0 {
		return raw, nil
	}
	if propsRaw, ok := schema.get("properties"); ok {
		props, err := parseObject(propsRaw)
		if err != nil {
			return nil, fmt.Errorf("properties: %v", err)
		}
		for _, f := range fixed {
			props.del(f.Key)
		}
		for _, d := range defaults {
			p, ok := props.get(d.Key)
			if !ok {
				continue
			}
			prop, err := parseObject(p)
			if err != nil {
				continue // a boolean schema, say: leave it
			}
			prop.set("default", d.Value)
			props.set(d.Key, prop.raw())
		}
		schema.set("properties", props.raw())
	}
	if reqRaw, ok := schema.get("required"); ok {
		var req []string
		if err := json.Unmarshal(reqRaw, &req); err == nil {
			kept := req[:0]
			for _, r := range req {
				_, isFixed := fixed.get(r)
				_, isDefault := defaults.get(r)
				if !isFixed && !isDefault {
					kept = append(kept, r)
				}
			}
			if len(kept) == 0 {
				schema.del("required")
			} else {
				schema.set("required", mustJSON(kept))
			}
		}
	}
	return schema.raw(), nil
}

func (a *arguments) toolCall(in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if !a.callers.applies(&in.Caller) {
		return pdk.Allow(), nil
	}
	fixed, defaults := valuesFor(a.fixed, in.Name), valuesFor(a.defaults, in.Name)
	if len(fixed) == 0 && len(defaults) == 0 {
		return pdk.Allow(), nil
	}
	args, err := parseObject(in.Arguments)
	if err != nil {
		return pdk.Denyf("%s: arguments are not a JSON object", in.Name), nil
	}
	changed := false
	for _, d := range defaults {
		if _, ok := args.get(d.Key); !ok {
			args.set(d.Key, d.Value)
			changed = true
		}
	}
	for _, f := range fixed {
		if v, ok := args.get(f.Key); !ok || !bytes.Equal(v, f.Value) {
			args.set(f.Key, f.Value)
			changed = true
		}
	}
	if !changed {
		return pdk.Allow(), nil
	}
	return &abi.CallDecision{Action: abi.ActionRewrite, Arguments: args.raw()}, nil
}
