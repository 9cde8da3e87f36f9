package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// Caller templates: a server block's command, args, env, cwd, url and
// headers may use the caller's values (${caller.subject}), evaluated for
// each identity when its upstream session starts, as Nomad interpolates
// at run time. At load the expressions are checked and evaluated once with
// placeholders ("${caller.subject}"), which is what the server's settings,
// status and logs show; callerTemplate keeps the expressions for Apply.

// callerAttrs are the attributes of a server block that may use caller.
var callerAttrs = []string{"command", "args", "env", "cwd", "url", "headers"}

// callerFields are what caller offers.
var callerFields = []string{"subject", "groups", "attributes", "secrets"}

// callerRef is one use of caller.attributes.NAME or caller.secrets.NAME,
// checked once the listen and store blocks are known (checkCallerRefs).
type callerRef struct {
	server, name string
	secret       bool // caller.secrets.NAME
	rng          hcl.Range
}

// callerTemplate is a server's caller templates: upstream.CallerTemplate.
type callerTemplate struct {
	server  string
	dir     string                    // the config file's, for a relative cwd
	exprs   map[string]hcl.Expression // by attribute, of callerAttrs
	names   []string                  // attribute names the expressions read
	secrets []string                  // secret names the expressions read
	shown   string                    // the templates as their placeholders render them
}

// serverCallerTemplate finds the attributes of a server block that use
// caller, checks each use, and returns their template (nil when none
// does). While the block's attributes are decoded, d.ctx offers caller's
// placeholders; undo restores it.
func (d *decoder) serverCallerTemplate(server string, attrs hcl.Attributes) (t *callerTemplate, undo func()) {
	undo = func() {}
	if d.ctx == nil {
		return nil, undo // a definition from the API: values are taken as written
	}
	exprs := map[string]hcl.Expression{}
	names, secrets := map[string]bool{}, map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		attr := attrs[name]
		uses := false
		for _, tr := range attr.Expr.Variables() {
			if tr.RootName() != "caller" {
				continue
			}
			uses = true
			ok := slices.Contains(callerAttrs, name)
			var field, n string
			if !ok {
				d.errorf(tr.SourceRange(), "Caller values not allowed here",
					"%s cannot use the caller's values: only %s of a server can.", name, orList(callerAttrs))
			} else {
				field, n, ok = d.checkCallerTraversal(tr)
			}
			if !ok {
				if d.badCaller == nil {
					d.badCaller = map[*hcl.Attribute]bool{}
				}
				d.badCaller[attr] = true
				continue
			}
			if n != "" {
				if field == "secrets" {
					secrets[n] = true
				} else {
					names[n] = true
				}
				d.callerRefs = append(d.callerRefs, callerRef{server: server, name: n, secret: field == "secrets", rng: tr.SourceRange()})
			}
		}
		if uses && slices.Contains(callerAttrs, name) && !d.badCaller[attr] {
			exprs[name] = attr.Expr
		}
	}
	if len(exprs) == 0 {
		return nil, undo
	}
	t = &callerTemplate{server: server, dir: d.dir, exprs: exprs, names: slices.Sorted(maps.Keys(names)), secrets: slices.Sorted(maps.Keys(secrets))}
	saved := d.ctx.Variables
	d.ctx.Variables = map[string]cty.Value{"caller": placeholderCaller(t.names, t.secrets)}
	return t, func() { d.ctx.Variables = saved }
}

// checkCallerTraversal checks one use of caller and returns the field it
// reads and, for caller.attributes.NAME and caller.secrets.NAME, the name.
func (d *decoder) checkCallerTraversal(tr hcl.Traversal) (field, name string, ok bool) {
	if len(tr) < 2 {
		d.errorf(tr.SourceRange(), "Incomplete caller reference",
			"caller alone is not a value: use caller.subject, caller.groups, caller.attributes.NAME or caller.secrets.NAME.")
		return "", "", false
	}
	field, ok = traverserName(tr[1])
	if !ok || !slices.Contains(callerFields, field) {
		d.errorf(tr.SourceRange(), "Unknown caller field",
			"caller has no field %q.%s It has subject, groups, attributes.NAME and secrets.NAME.", field, didYouMean(field, callerFields))
		return "", "", false
	}
	switch field {
	case "attributes", "secrets":
		if len(tr) != 3 {
			d.errorf(tr.SourceRange(), "Incomplete caller reference",
				"caller.%s needs the name: caller.%s.NAME.", field, field)
			return "", "", false
		}
		name, ok = traverserName(tr[2])
		if !ok {
			d.errorf(tr.SourceRange(), "Invalid caller reference", "Name it as caller.%s.NAME.", field)
			return "", "", false
		}
		if field == "secrets" && !ValidSecretName(name) {
			d.errorf(tr.SourceRange(), "Invalid secret name",
				"%q cannot name a caller's secret: use letters, digits and _, starting with a letter or _, at most 64.", name)
			return "", "", false
		}
		return field, name, true
	default:
		if len(tr) != 2 {
			d.errorf(tr.SourceRange(), "Invalid caller reference", "caller.%s has no fields of its own.", field)
			return "", "", false
		}
	}
	return field, "", true
}

// ValidSecretName reports whether name may name a caller's secret
// (caller.secrets.NAME, and /v1/users/{subject}/secrets/{name}): letters,
// digits and _, starting with a letter or _, at most 64 bytes.
func ValidSecretName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// traverserName is the name a traversal step reads: .name or ["name"].
func traverserName(t hcl.Traverser) (string, bool) {
	switch t := t.(type) {
	case hcl.TraverseAttr:
		return t.Name, true
	case hcl.TraverseIndex:
		if t.Key.Type() == cty.String && t.Key.IsKnown() && !t.Key.IsNull() {
			return t.Key.AsString(), true
		}
	}
	return "", false
}

// checkCallerRefs requires every caller.attributes.NAME to name an
// attribute that callers can have: one of a key's attributes, or one
// that listen.auth.oauth maps from a claim. Without listen.auth no caller
// has an identity, and no caller template can be filled in.
//
// With a store, users added at run time (/v1/users) may have attributes
// the file does not name: an unknown one is then a warning.
func (d *decoder) checkCallerRefs(a *auth.Config, st *Store) {
	runtimeUsers := st != nil
	if len(d.callerServers) > 0 && a == nil {
		for _, s := range slices.Sorted(maps.Keys(d.callerServers)) {
			d.errorf(d.callerServers[s], "Caller values without callers",
				"Server %q uses the caller's values, but this mcphost does not know its callers: add listen.auth (keys or oauth), so that each caller has an identity.", s)
		}
		return
	}
	known := map[string]bool{}
	if a != nil {
		for _, k := range a.Keys {
			for name := range k.Attributes {
				known[name] = true
			}
		}
		if a.OAuth != nil {
			for name := range a.OAuth.Attributes {
				known[name] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(known))
	for _, r := range d.callerRefs {
		if r.secret {
			d.checkSecretRef(r, st)
			continue
		}
		if !known[r.name] {
			hint := " No caller has attributes: give keys attributes = { ... } or map claims with listen.auth.oauth attributes."
			if len(names) > 0 {
				hint = fmt.Sprintf("%s Callers have %s.", didYouMean(r.name, names), strings.Join(names, ", "))
			}
			if runtimeUsers {
				d.warnf(r.rng, "Unknown caller attribute",
					"Server %q reads caller.attributes.%s, which no caller of the file has.%s Users added at run time (mcphost users) may have it; a caller without it is refused.", r.server, r.name, hint)
				continue
			}
			d.errorf(r.rng, "Unknown caller attribute",
				"Server %q reads caller.attributes.%s, which no caller has.%s", r.server, r.name, hint)
		}
	}
}

// checkSecretRef requires a store with a key for a caller.secrets.NAME:
// that is where callers' secrets are kept, sealed.
func (d *decoder) checkSecretRef(r callerRef, st *Store) {
	switch {
	case st == nil:
		d.errorf(r.rng, "Caller secrets without a store",
			"Server %q reads caller.secrets.%s, and callers' secrets are kept in the store: add a store block (sqlite or postgres) with a key.", r.server, r.name)
	case st.Key == nil:
		d.errorf(r.rng, "Caller secrets without a store key",
			"Server %q reads caller.secrets.%s, and callers' secrets are kept sealed with the store's key: give the store block a key (mcphost keygen).", r.server, r.name)
	}
}

// placeholderCaller is caller as the load shows it: each value its own
// reference, so that the evaluated settings read as their templates.
func placeholderCaller(names, secrets []string) cty.Value {
	attrs := map[string]cty.Value{}
	for _, n := range names {
		attrs[n] = cty.StringVal("${caller.attributes." + n + "}")
	}
	secs := map[string]cty.Value{}
	for _, n := range secrets {
		secs[n] = cty.StringVal("${caller.secrets." + n + "}")
	}
	return callerValue("${caller.subject}", []string{"${caller.groups}"}, attrs, secs)
}

func callerValue(subject string, groups []string, attrs, secrets map[string]cty.Value) cty.Value {
	g := cty.ListValEmpty(cty.String)
	if len(groups) > 0 {
		vals := make([]cty.Value, len(groups))
		for i, s := range groups {
			vals[i] = cty.StringVal(s)
		}
		g = cty.ListVal(vals)
	}
	a, s := cty.EmptyObjectVal, cty.EmptyObjectVal
	if len(attrs) > 0 {
		a = cty.ObjectVal(attrs)
	}
	if len(secrets) > 0 {
		s = cty.ObjectVal(secrets)
	}
	return cty.ObjectVal(map[string]cty.Value{"subject": cty.StringVal(subject), "groups": g, "attributes": a, "secrets": s})
}

// Apply fills the templates in for id (upstream.CallerTemplate). A caller
// without an attribute or a secret the templates read is refused: an
// empty value would give callers without it one shared upstream. For no
// caller (the server's own session) every value is empty.
func (t *callerTemplate) Apply(s upstream.ServerConfig, id *auth.Identity, secrets map[string]string) (upstream.ServerConfig, error) {
	attrs := map[string]cty.Value{}
	var subject string
	var groups []string
	for _, n := range t.names {
		v := ""
		if id != nil {
			var ok bool
			if v, ok = id.Attributes[n]; !ok {
				return s, fmt.Errorf("server %q starts each caller's upstream with their attribute %q, which %s does not have: give it to them (their key's attributes, or a claim listen.auth.oauth maps)", t.server, n, id.String())
			}
		}
		attrs[n] = cty.StringVal(v)
	}
	secs := map[string]cty.Value{}
	var hide []string
	for _, n := range t.secrets {
		v := ""
		if id != nil {
			var ok bool
			if v, ok = secrets[n]; !ok {
				return s, fmt.Errorf("server %q starts each caller's upstream with their secret %q, which %s has not given", t.server, n, id.String())
			}
			hide = append(hide, v)
		}
		secs[n] = cty.StringVal(v)
	}
	if id != nil {
		subject, groups = id.Subject, id.Groups
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"caller": callerValue(subject, groups, attrs, secs)},
		Functions: map[string]function.Function{"env": envFunction(plainValue), "file": fileFunction(t.path, nil, plainValue)},
	}
	for _, name := range callerAttrs {
		expr, ok := t.exprs[name]
		if !ok {
			continue
		}
		val, diags := expr.Value(ctx)
		if diags.HasErrors() {
			// The diagnostics name the expression; a function's may
			// quote its argument, which may be a secret.
			return s, fmt.Errorf("server %q: filling in %s for the caller: %s", t.server, name, hideValues(diags.Error(), hide))
		}
		if err := t.set(&s, name, val); err != nil {
			return s, fmt.Errorf("server %q: filling in %s for the caller: %w", t.server, name, err)
		}
	}
	return s, nil
}

// set puts one evaluated attribute into s.
func (t *callerTemplate) set(s *upstream.ServerConfig, name string, val cty.Value) error {
	switch name {
	case "command", "cwd", "url":
		v, err := convert.Convert(val, cty.String)
		if err != nil || v.IsNull() {
			return fmt.Errorf("%s must be a string", name)
		}
		str := v.AsString()
		switch name {
		case "command":
			if str == "" {
				return fmt.Errorf("the command is empty for this caller")
			}
			s.Command = str
		case "cwd":
			s.Cwd = t.path(str)
		case "url":
			u, err := url.Parse(str)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("the url is not an http(s) URL for this caller")
			}
			s.URL = str
		}
	case "args":
		v, err := convert.Convert(val, cty.List(cty.String))
		if err != nil || v.IsNull() {
			return fmt.Errorf("args must be a list of strings")
		}
		s.Args = nil
		for _, e := range v.AsValueSlice() {
			s.Args = append(s.Args, e.AsString())
		}
	case "env", "headers":
		v, err := convert.Convert(val, cty.Map(cty.String))
		if err != nil || v.IsNull() {
			return fmt.Errorf("%s must be a map of strings", name)
		}
		m := map[string]string{}
		for k, e := range v.AsValueMap() {
			m[k] = e.AsString()
		}
		if name == "env" {
			s.Env = m
		} else {
			s.Headers = m
		}
	}
	return nil
}

func (t *callerTemplate) path(p string) string {
	return (&decoder{dir: t.dir}).path(p)
}

// hideValues replaces each of values in text.
func hideValues(text string, values []string) string {
	for _, v := range values {
		if v != "" {
			text = strings.ReplaceAll(text, v, "(a secret)")
		}
	}
	return text
}

// Secrets names the caller's secrets the templates read.
func (t *callerTemplate) Secrets() []string { return t.secrets }

// String is the templates as their placeholders render them.
func (t *callerTemplate) String() string { return t.shown }

// render records what the placeholders made of the templated attributes
// (s as decoded), for String.
func (t *callerTemplate) render(s upstream.ServerConfig) {
	var b strings.Builder
	for _, name := range callerAttrs {
		if _, ok := t.exprs[name]; !ok {
			continue
		}
		var v any
		switch name {
		case "command":
			v = s.Command
		case "args":
			v = s.Args
		case "env":
			v = s.Env
		case "cwd":
			v = s.Cwd
		case "url":
			v = s.URL
		case "headers":
			v = s.Headers
		}
		fmt.Fprintf(&b, "%s=%q\n", name, fmt.Sprint(v))
	}
	t.shown = b.String()
}

var _ upstream.CallerTemplate = (*callerTemplate)(nil)
