package config

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// pluginConfig reads a plugin's config object. Extism config is a map of
// strings, so strings pass through as written and every other value is
// JSON-encoded (2000 -> "2000", ["a","b"] -> `["a","b"]`) for the plugin to
// parse.
func (d *decoder) pluginConfig(attr *hcl.Attribute) (map[string]string, bool) {
	val, ok := d.eval(attr)
	if !ok {
		return nil, false
	}
	if !val.Type().IsObjectType() && !val.Type().IsMapType() {
		d.errorf(attr.Expr.Range(), `Invalid value for "config"`,
			"config must be an object of settings, like { mode = \"plan\", limit = 2000 }.")
		return nil, false
	}
	out := map[string]string{}
	for it := val.ElementIterator(); it.Next(); {
		k, v := it.Element()
		key := k.AsString()
		if v.Type() == cty.String && !v.IsNull() {
			out[key] = v.AsString()
			continue
		}
		goVal, err := jsonValue(v)
		if err == nil {
			var b []byte
			b, err = json.Marshal(goVal)
			out[key] = string(b)
		}
		if err != nil {
			d.errorf(attr.Expr.Range(), `Invalid value for "config"`,
				"The value of %q cannot be passed to the plugin: %s. Use strings, numbers, bools, lists and objects.", key, err)
			return nil, false
		}
	}
	return out, true
}

// jsonValue converts a known cty value to what encoding/json marshals the
// same way. cty's own JSON encoder is not used because it wraps values of
// dynamic type (a literal null, say) in {"value":..., "type":...}.
func jsonValue(v cty.Value) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString(), nil
	case ty == cty.Bool:
		return v.True(), nil
	case ty == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInf() {
			return nil, fmt.Errorf("infinity is not a JSON number")
		}
		return json.Number(bf.Text('f', -1)), nil
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		list := []any{}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			ev, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			list = append(list, ev)
		}
		return list, nil
	case ty.IsMapType() || ty.IsObjectType():
		obj := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			ev, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			obj[k.AsString()] = ev
		}
		return obj, nil
	}
	return nil, fmt.Errorf("%s values have no JSON form", ty.FriendlyName())
}
