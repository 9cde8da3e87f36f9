package config

import (
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// The text path: how Server decoded a definition until it wrote HCL's
// JSON syntax — rendered as a server block in HCL text, parsed, and
// decoded with the file's functions. It stays here as the reference the
// JSON path is held to (TestServerSpecJSONMatchesText,
// FuzzServerSpecJSONMatchesText) and measured against
// (BenchmarkServerSpec).

// serverFromText is Server by way of HCL text.
func (s ServerSpec) serverFromText(configPath string) (upstream.ServerConfig, error) {
	f, diags := hclsyntax.ParseConfig(s.hcl(), "definition.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return upstream.ServerConfig{}, &SpecError{Errors: []FieldError{{Detail: "the definition cannot be written as a server block: " + diags.Error()}}}
	}
	d := &decoder{}
	return s.decode(configPath, f.Body, d.evalContext(), textFieldRanges)
}

// hcl renders the definition as a server block. Every value is a literal
// (hclwrite escapes "${" and "%{"), so a definition from outside cannot
// call env() or file().
func (s ServerSpec) hcl() []byte {
	f := hclwrite.NewEmptyFile()
	b := f.Body().AppendNewBlock("server", []string{s.Name}).Body()
	str := func(name, v string) {
		if v != "" {
			b.SetAttributeValue(name, cty.StringVal(v))
		}
	}
	str("transport", s.Transport)
	str("command", s.Command)
	strList(b, "args", s.Args)
	strMap(b, "env", s.Env)
	str("cwd", s.Cwd)
	str("url", s.URL)
	strMap(b, "headers", s.Headers)
	str("timeout", s.Timeout)
	str("idle_timeout", s.IdleTimeout)
	str("connect_timeout", s.ConnectTimeout)
	str("sessions", s.Sessions)
	if s.MaxSessions != 0 {
		b.SetAttributeValue("max_sessions", cty.NumberIntVal(int64(s.MaxSessions)))
	}
	str("protocol_version", s.ProtocolVersion)
	if o := s.OAuth; o != nil {
		ob := b.AppendNewBlock("oauth", nil).Body()
		for _, kv := range [][2]string{{"grant", o.Grant}, {"mode", o.Mode}, {"client_id", o.ClientID}, {"client_secret", o.ClientSecret},
			{"issuer", o.Issuer}, {"audience", o.Audience}, {"redirect_url", o.RedirectURL}, {"client_metadata_url", o.ClientMetadataURL}} {
			if kv[1] != "" {
				ob.SetAttributeValue(kv[0], cty.StringVal(kv[1]))
			}
		}
		strList(ob, "scopes", o.Scopes)
	}
	return f.Bytes()
}

// strList writes a list of strings; an empty one as [], a nil one not at
// all.
func strList(b *hclwrite.Body, name string, list []string) {
	if list == nil {
		return
	}
	if len(list) == 0 {
		b.SetAttributeValue(name, cty.ListValEmpty(cty.String))
		return
	}
	vals := make([]cty.Value, len(list))
	for i, v := range list {
		vals[i] = cty.StringVal(v)
	}
	b.SetAttributeValue(name, cty.ListVal(vals))
}

// strMap writes a map of strings as an object whose keys are all quoted
// (and escaped): a bare key such as "for" would start a for expression.
func strMap(b *hclwrite.Body, name string, m map[string]string) {
	if m == nil {
		return
	}
	attrs := make([]hclwrite.ObjectAttrTokens, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		attrs = append(attrs, hclwrite.ObjectAttrTokens{
			Name:  hclwrite.TokensForValue(cty.StringVal(k)),
			Value: hclwrite.TokensForValue(cty.StringVal(m[k])),
		})
	}
	b.SetAttributeRaw(name, hclwrite.TokensForObject(attrs))
}

// textFieldRanges lists where each field of the rendered block is,
// innermost last.
func textFieldRanges(block *hcl.Block) []fieldRange {
	out := []fieldRange{{"name", block.LabelRanges[0]}}
	body, ok := block.Body.(*hclsyntax.Body)
	if !ok {
		return out
	}
	for name, a := range body.Attributes {
		out = append(out, fieldRange{name, a.SrcRange})
	}
	for _, nb := range body.Blocks {
		out = append(out, fieldRange{nb.Type, nb.Range()})
		for name, a := range nb.Body.Attributes {
			out = append(out, fieldRange{nb.Type + "." + name, a.SrcRange})
		}
	}
	return innermostLast(out)
}
