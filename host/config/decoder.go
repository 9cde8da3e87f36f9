package config

import (
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// decoder carries what every block decoder needs and collects diagnostics, so
// that one pass reports every mistake instead of stopping at the first.
type decoder struct {
	dir     string // the config file's directory, for relative paths
	ctx     *hcl.EvalContext
	diags   hcl.Diagnostics
	sources []string // files read through file(), for the watcher
	// sourceRanges are where each plugin's source is written, for
	// diagnostics about the module found there (File.SourceRange).
	sourceRanges map[string]hcl.Range
	// commandRanges are where each server's command is written
	// (File.CommandRange).
	commandRanges map[string]hcl.Range
	// configRanges are where each plugin's config and its keys are
	// written (File.ConfigRange).
	configRanges map[string]configRange
	// loadRanges are, for each plugin, the arguments its module is loaded
	// with (source, config, memory, ...): a plugin with an error in one of
	// them is not loaded to check it further (Diagnostics.Partial).
	loadRanges map[string][]hcl.Range
	// evalSecrets collects what env() and file() return while one
	// attribute is evaluated; hidden lists the attributes that held any.
	evalSecrets []secret
	hidden      []hiddenAttr
	// authTokenFailed is set when listen.auth_token is written but its
	// value failed (reported there): the listener has a token, as far as
	// the checks that need one go.
	authTokenFailed bool
	// callerRefs are the caller.attributes.NAME that server blocks read,
	// and callerServers where each server that uses caller is declared
	// (checkCallerRefs).
	callerRefs    []callerRef
	callerServers map[string]hcl.Range
	// badCaller are attributes whose use of caller was refused: they are
	// not evaluated, so that the refusal stands alone.
	badCaller map[*hcl.Attribute]bool
}

// path makes p absolute against the config file's directory, so the meaning
// of a config does not depend on where mcphost was started.
func (d *decoder) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

func (d *decoder) errorf(subject hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  subject.Ptr(),
	})
}

func (d *decoder) warnf(subject hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  subject.Ptr(),
	})
}

// eval evaluates an attribute. ok is false when the attribute is absent or
// null (both mean "use the default"), or when evaluating it failed; failures
// are already reported, so callers just keep the zero value.
func (d *decoder) eval(attr *hcl.Attribute) (cty.Value, bool) {
	if attr == nil || d.badCaller[attr] {
		return cty.NilVal, false
	}
	d.evalSecrets = nil
	val, diags := attr.Expr.Value(d.ctx)
	if len(d.evalSecrets) > 0 {
		d.hidden = append(d.hidden, hiddenAttr{rng: attr.Range, secrets: d.evalSecrets})
	}
	fixEnvDiags(diags)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() || !val.IsWhollyKnown() || val.IsNull() {
		return cty.NilVal, false
	}
	return val, true
}

// convert converts val to ty, reporting a mismatch in the operator's terms:
// want describes the expected value, with an example.
func (d *decoder) convert(attr *hcl.Attribute, val cty.Value, ty cty.Type, want string) (cty.Value, bool) {
	out, err := convert.Convert(val, ty)
	if err != nil {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid value for %q", attr.Name),
			"%s must be %s; %s.", attr.Name, want, describeConvertError(err))
		return cty.NilVal, false
	}
	return out, true
}

// describeConvertError says where inside a value a conversion failed.
func describeConvertError(err error) string {
	var pe cty.PathError
	if !errors.As(err, &pe) || len(pe.Path) == 0 {
		return err.Error()
	}
	var where []string
	for _, step := range pe.Path {
		switch s := step.(type) {
		case cty.IndexStep:
			if s.Key.Type() == cty.String {
				where = append(where, fmt.Sprintf("key %q", s.Key.AsString()))
			} else if s.Key.Type() == cty.Number {
				where = append(where, "element "+s.Key.AsBigFloat().Text('f', -1))
			}
		case cty.GetAttrStep:
			where = append(where, fmt.Sprintf("key %q", s.Name))
		}
	}
	if len(where) == 0 {
		return pe.Error()
	}
	return strings.Join(where, ", ") + ": " + pe.Error()
}

func (d *decoder) string(attr *hcl.Attribute) (string, bool) {
	val, ok := d.eval(attr)
	if !ok {
		return "", false
	}
	val, ok = d.convert(attr, val, cty.String, `a string`)
	if !ok {
		return "", false
	}
	return val.AsString(), true
}

func (d *decoder) bool(attr *hcl.Attribute) (bool, bool) {
	val, ok := d.eval(attr)
	if !ok {
		return false, false
	}
	val, ok = d.convert(attr, val, cty.Bool, `true or false`)
	if !ok {
		return false, false
	}
	return val.True(), true
}

// int reads a whole number in [lo, hi].
func (d *decoder) int(attr *hcl.Attribute, lo, hi int64) (int64, bool) {
	val, ok := d.eval(attr)
	if !ok {
		return 0, false
	}
	val, ok = d.convert(attr, val, cty.Number, `a whole number`)
	if !ok {
		return 0, false
	}
	n, acc := val.AsBigFloat().Int64()
	if acc != big.Exact || n < lo || n > hi {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid value for %q", attr.Name),
			"%s must be a whole number from %d to %d.", attr.Name, lo, hi)
		return 0, false
	}
	return n, true
}

// stringList reads a list of strings. It also returns the range of each
// element when the list is written literally, so later checks can point at
// the exact element; otherwise every range is the whole expression.
func (d *decoder) stringList(attr *hcl.Attribute) ([]string, []hcl.Range, bool) {
	val, ok := d.eval(attr)
	if !ok {
		return nil, nil, false
	}
	val, ok = d.convert(attr, val, cty.List(cty.String), `a list of strings, like ["a", "b"]`)
	if !ok {
		return nil, nil, false
	}
	ranges := elementRanges(attr.Expr, val.LengthInt())
	out := make([]string, 0, val.LengthInt())
	for i, v := range val.AsValueSlice() {
		if v.IsNull() {
			d.errorf(ranges[i], fmt.Sprintf("Invalid value for %q", attr.Name),
				"%s must be a list of strings; element %d is null. Remove it.", attr.Name, i)
			return nil, nil, false
		}
		out = append(out, v.AsString())
	}
	return out, ranges, true
}

func elementRanges(expr hcl.Expression, n int) []hcl.Range {
	ranges := make([]hcl.Range, n)
	elems, diags := hcl.ExprList(expr)
	for i := range ranges {
		if !diags.HasErrors() && len(elems) == n {
			ranges[i] = elems[i].Range()
		} else {
			ranges[i] = expr.Range()
		}
	}
	return ranges
}

// stringMap reads a map of strings; numbers and bools become their text.
func (d *decoder) stringMap(attr *hcl.Attribute) (map[string]string, bool) {
	val, ok := d.eval(attr)
	if !ok {
		return nil, false
	}
	val, ok = d.convert(attr, val, cty.Map(cty.String), `a map of strings, like { NAME = "value" }`)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, val.LengthInt())
	for it := val.ElementIterator(); it.Next(); {
		kv, v := it.Element()
		k := kv.AsString()
		if v.IsNull() {
			d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid value for %q", attr.Name),
				"%s must be a map of strings; the value of %q is null. Remove the key or give it a string.", attr.Name, k)
			return nil, false
		}
		out[k] = v.AsString()
	}
	return out, true
}

// enum reads a string that must be one of allowed, suggesting the nearest.
func (d *decoder) enum(attr *hcl.Attribute, allowed ...string) (string, bool) {
	s, ok := d.string(attr)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid %s", attr.Name),
		"%s must be %s, not %q.%s", attr.Name, orList(allowed), s, didYouMean(s, allowed))
	return "", false
}

// orList renders `"a", "b" or "c"`.
func orList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// reported reports whether a diagnostic already points into attr, so that a
// later check does not add a second complaint about the same mistake.
func (d *decoder) reported(attr *hcl.Attribute) bool {
	if attr == nil {
		return false
	}
	for _, diag := range d.diags {
		if diag.Subject != nil && diag.Subject.Overlaps(attr.Range) {
			return true
		}
	}
	return false
}

// missing reports whether a required attribute is missing: not written, or
// written as "". One whose value failed to evaluate (an unset env(), say)
// counts as set: its error is reported where it is written, and a second
// one saying it is missing would send the operator after a mistake they
// did not make.
func (d *decoder) missing(attr *hcl.Attribute, v string) bool {
	return v == "" && !d.reported(attr)
}

// rangeOr points at attr's value when it is written, else at fallback
// (usually the block header, where a missing argument belongs).
func rangeOr(attr *hcl.Attribute, fallback hcl.Range) hcl.Range {
	if attr == nil {
		return fallback
	}
	return attr.Expr.Range()
}
