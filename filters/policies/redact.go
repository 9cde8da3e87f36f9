package policies

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
	"github.com/mcphost-project/mcphost/internal/secrets"
)

// redact is builtin:redact: it masks secrets in results and in what else
// carries content to the client (the message hook, on redactMethods), and
// in arguments if asked. Configuration:
//
//	patterns  = ["acme_[0-9a-f]{32}"]   # extra regexes (RE2); or an object
//	                                    # { name = "regex" } to name them
//	builtins  = true    # the built-in credential patterns; false for only yours
//	arguments = false   # also mask call arguments before they go upstream
//	note      = true    # append a text block saying how many were masked
//	mask      = "[REDACTED:{kind}]"
type redact struct {
	patterns  []secrets.Pattern
	arguments bool
	note      bool
	mask      string
}

// MaxPatternLength bounds a custom pattern.
const MaxPatternLength = 4096

func newRedact() pdk.Policy {
	r := &redact{}
	return pdk.Policy{
		Name:       "redact",
		Version:    Version,
		Configure:  r.configure,
		ToolCall:   r.toolCall,
		ToolResult: r.toolResult,
		Message:    r.message,
		// Unless it masks arguments, tool_call allows everything. A
		// result or message is looked at only if it holds a keyword of
		// a pattern, when every pattern has keywords (custom ones have
		// none).
		Hints: func() abi.Hints {
			keywords := r.keywords()
			return abi.Hints{
				CallIgnoresArguments: !r.arguments, IgnoresCaller: !r.arguments, ResultKeywords: keywords,
				Methods: map[string][]string{abi.HookMessage: redactMethods}, MessageKeywords: keywords,
			}
		},
	}
}

func (r *redact) configure(cfg pdk.ConfigSource) error {
	var err error
	if r.arguments, err = boolean(cfg, "arguments", false); err != nil {
		return err
	}
	if r.note, err = boolean(cfg, "note", true); err != nil {
		return err
	}
	builtins, err := boolean(cfg, "builtins", true)
	if err != nil {
		return err
	}
	r.mask = cfg.String("mask", "[REDACTED:{kind}]")
	if builtins {
		r.patterns = append(r.patterns, secrets.Credentials()...)
	}
	custom, err := parsePatterns(cfg)
	if err != nil {
		return err
	}
	r.patterns = append(r.patterns, custom...)
	if len(r.patterns) == 0 {
		return fmt.Errorf(`nothing to mask: builtins = false and no "patterns"`)
	}
	return nil
}

// parsePatterns reads "patterns": a list of regexes, a single regex, or an
// object naming each.
func parsePatterns(cfg pdk.ConfigSource) ([]secrets.Pattern, error) {
	raw, ok := cfg.Lookup("patterns")
	if !ok || raw == "" {
		return nil, nil
	}
	type named struct{ name, expr string }
	var list []named
	if t := strings.TrimSpace(raw); strings.HasPrefix(t, "{") {
		o, err := parseObject([]byte(t))
		if err != nil {
			return nil, fmt.Errorf(`config "patterns": %v`, err)
		}
		for _, m := range o {
			var expr string
			if err := json.Unmarshal(m.Value, &expr); err != nil {
				return nil, fmt.Errorf(`config "patterns": %q: want a regex string`, m.Key)
			}
			list = append(list, named{m.Key, expr})
		}
	} else {
		exprs, err := cfg.Strings("patterns")
		if err != nil {
			return nil, err
		}
		for _, e := range exprs {
			list = append(list, named{"custom", e})
		}
	}
	out := make([]secrets.Pattern, 0, len(list))
	for _, n := range list {
		switch {
		case n.expr == "":
			return nil, fmt.Errorf(`config "patterns": %q is empty`, n.name)
		case len(n.expr) > MaxPatternLength:
			return nil, fmt.Errorf(`config "patterns": %q is longer than %d bytes`, n.name, MaxPatternLength)
		}
		re, err := regexp.Compile(n.expr)
		if err != nil {
			return nil, fmt.Errorf(`config "patterns": %q: %v`, n.name, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf(`config "patterns": %q matches the empty string, so it would mask everywhere`, n.name)
		}
		out = append(out, secrets.Pattern{Name: n.name, RE: re})
	}
	return out, nil
}

// counts is what was masked in one result (or one call's arguments): per
// kind, the distinct secrets. A secret is counted once however often it
// appears, so one token in both a text block and structuredContent (as
// json_results-style servers send it) is one secret, not two. The values
// stay in the guest's memory for the one hook call; only their number
// leaves it.
type counts map[string]map[string]struct{}

func (c counts) add(kind, secret string) {
	if c[kind] == nil {
		c[kind] = map[string]struct{}{}
	}
	c[kind][secret] = struct{}{}
}

func (c counts) total() int {
	n := 0
	for _, v := range c {
		n += len(v)
	}
	return n
}

func (c counts) String() string {
	kinds := make([]string, 0, len(c))
	for k := range c {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", len(c[k]), k)
	}
	return strings.Join(parts, ", ")
}

// maskString masks every secret in s.
func (r *redact) maskString(s string, n counts) (string, bool) {
	changed := false
	for _, p := range r.patterns {
		if !p.MayMatch(s) {
			continue
		}
		mask := strings.ReplaceAll(r.mask, "{kind}", p.Name)
		out := p.RE.ReplaceAllStringFunc(s, func(secret string) string {
			n.add(p.Name, secret)
			return mask
		})
		if out != s {
			s, changed = out, true
		}
	}
	return s, changed
}

// keywords returns every keyword of the patterns, or nil if a pattern has
// none (and so must run on every string).
func (r *redact) keywords() []string {
	var words []string
	for _, p := range r.patterns {
		if len(p.Keywords) == 0 {
			return nil
		}
		words = append(words, p.Keywords...)
	}
	return words
}

func (r *redact) toolCall(in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if !r.arguments || len(in.Arguments) == 0 {
		return pdk.Allow(), nil
	}
	n := counts{}
	args, changed, err := mapStrings(in.Arguments, func(s string) (string, bool) { return r.maskString(s, n) })
	if err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	if !changed {
		return pdk.Allow(), nil
	}
	logf(pdk.LevelInfo, "masked %s in the arguments of %s", n, in.Name)
	return &abi.CallDecision{Action: abi.ActionRewrite, Arguments: args}, nil
}

func (r *redact) toolResult(in *abi.ToolResultInput) (*abi.ToolResultOutput, error) {
	res := in.Result
	if res == nil {
		return nil, nil
	}
	n := counts{}
	mask := func(s string) (string, bool) { return r.maskString(s, n) }
	// Every string a client may show or keep: each block's text fields,
	// resource contents (never a base64 blob), annotations and _meta, and
	// the keys and values of structuredContent and _meta.
	for i := range res.Content {
		c := &res.Content[i]
		for _, f := range []*string{&c.Text, &c.URI, &c.Name, &c.Title, &c.Description, &c.MimeType} {
			*f, _ = mask(*f)
		}
		if len(c.Resource) > 0 {
			o, err := parseObject(c.Resource)
			if err != nil {
				return nil, fmt.Errorf("content %d: resource: %v", i, err)
			}
			changed := false
			for j := range o {
				if o[j].Key == "blob" {
					continue
				}
				v, ch, err := mapStringsAndKeys(o[j].Value, mask)
				if err != nil {
					return nil, fmt.Errorf("content %d: resource: %v", i, err)
				}
				if ch {
					o[j].Value, changed = v, true
				}
			}
			if changed {
				c.Resource = o.raw()
			}
		}
		for _, f := range []*json.RawMessage{&c.Annotations, &c.Meta} {
			if err := maskRaw(f, mask); err != nil {
				return nil, fmt.Errorf("content %d: %v", i, err)
			}
		}
	}
	if err := maskRaw(&res.StructuredContent, mask); err != nil {
		return nil, fmt.Errorf("structuredContent: %v", err)
	}
	if err := maskRaw(&res.Meta, mask); err != nil {
		return nil, fmt.Errorf("_meta: %v", err)
	}
	total := n.total()
	if total == 0 {
		return nil, nil
	}
	logf(pdk.LevelInfo, "masked %s in the result of %s", n, in.Name)
	if meta, err := parseObject(res.Meta); err == nil {
		meta.set("mcphost/redacted", mustJSON(total))
		res.Meta = meta.raw()
	}
	if r.note {
		word := "secrets"
		if total == 1 {
			word = "secret"
		}
		res.Content = append(res.Content, abi.Content{Type: "text",
			Text: fmt.Sprintf("[mcphost: %d %s masked in this result (%s)]", total, word, n)})
	}
	return &abi.ToolResultOutput{Result: res}, nil
}

// redactMethods are the methods whose messages redact masks: every one
// that carries content to the client but notifications/resources/updated,
// which holds only a URI the client subscribed to.
var redactMethods = []string{
	abi.MethodPromptsGet, abi.MethodResourcesRead, abi.MethodComplete,
	abi.MethodLoggingMessage, abi.MethodProgress, abi.MethodCreateMessage, abi.MethodElicit,
}

// message masks every string value of a message (never an object key, nor
// base64 data, nor what routes the message: a progress token, the URIs of
// a resource's contents), and records the count in its _meta.
func (r *redact) message(in *abi.MessageInput) (*abi.MessageOutput, error) {
	if !contains(redactMethods, in.Method) {
		return nil, nil
	}
	o, err := parseObject(in.Message)
	if err != nil {
		// Every message of these methods is an object: passing on
		// anything else unexamined would fail open.
		return nil, fmt.Errorf("%s: the message is not a JSON object: %v", in.Method, err)
	}
	keep := []string{"progressToken"}
	if in.Method == abi.MethodResourcesRead {
		keep = append(keep, "uri")
	}
	n := counts{}
	w := messageWalk(func(s string) (string, bool) { return r.maskString(s, n) }, r.mayMatch, keep...)
	changed, err := w.members(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", in.Method, err)
	}
	if !changed {
		return nil, nil
	}
	logf(pdk.LevelInfo, "masked %s in %s from %s", n, in.Method, in.Server)
	v, _ := o.get("_meta")
	if meta, err := parseObject(v); err == nil {
		meta.set("mcphost/redacted", mustJSON(n.total()))
		o.set("_meta", meta.raw())
	}
	msg := o.raw()
	return &abi.MessageOutput{Message: msg}, nil
}

// mayMatch reports whether a pattern could match a string inside raw
// JSON: raw holds a keyword of each pattern that needs one, or an escape
// sequence, which could spell a keyword.
func (r *redact) mayMatch(raw []byte) bool {
	if bytes.IndexByte(raw, '\\') >= 0 {
		return true
	}
	for _, p := range r.patterns {
		if len(p.Keywords) == 0 {
			return true
		}
		for _, k := range p.Keywords {
			if bytes.Contains(raw, []byte(k)) {
				return true
			}
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// maskRaw masks the keys and values of a JSON value in place. A value
// that is not JSON is an error: passing it on unexamined would fail open.
func maskRaw(raw *json.RawMessage, mask func(string) (string, bool)) error {
	if len(*raw) == 0 {
		return nil
	}
	v, changed, err := mapStringsAndKeys(*raw, mask)
	if err != nil {
		return err
	}
	if changed {
		*raw = v
	}
	return nil
}
