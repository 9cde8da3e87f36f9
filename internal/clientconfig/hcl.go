package clientconfig

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// HCL writes servers as mcphost server blocks. A reference is written as
// env("NAME") (env("NAME", "default") with its default), inside a template
// where it is part of a string: the value it stood for is never written.
// Each block is headed by a comment naming its source, where given.
func HCL(source string, servers []Server) []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	for i, s := range servers {
		if i > 0 {
			body.AppendNewline()
		}
		if source != "" {
			body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(fmt.Sprintf("# from %s: %s\n", source, s.From))}})
		}
		b := body.AppendNewBlock("server", []string{s.Name}).Body()
		b.SetAttributeValue("transport", cty.StringVal(s.Transport))
		if s.Transport == "stdio" {
			b.SetAttributeValue("command", cty.StringVal(s.Command))
			if len(s.Args) > 0 {
				elems := make([]hclwrite.Tokens, len(s.Args))
				for i, a := range s.Args {
					elems[i] = tokens(a)
				}
				b.SetAttributeRaw("args", hclwrite.TokensForTuple(elems))
			}
			object(b, "env", s.Env)
			if s.Cwd != "" {
				b.SetAttributeValue("cwd", cty.StringVal(s.Cwd))
			}
		} else {
			b.SetAttributeRaw("url", tokens(s.URL))
			object(b, "headers", s.Headers)
		}
	}
	return f.Bytes()
}

func object(b *hclwrite.Body, name string, pairs []Pair) {
	if len(pairs) == 0 {
		return
	}
	attrs := make([]hclwrite.ObjectAttrTokens, len(pairs))
	for i, p := range pairs {
		attrs[i] = hclwrite.ObjectAttrTokens{Name: hclwrite.TokensForValue(cty.StringVal(p.Name)), Value: tokens(p.Value)}
	}
	b.SetAttributeRaw(name, hclwrite.TokensForObject(attrs))
}

// tokens writes v: a string, a lone env(...) call, or a template of both.
func tokens(v Value) hclwrite.Tokens {
	if v.IsLiteral() {
		return hclwrite.TokensForValue(cty.StringVal(v.String()))
	}
	if len(v) == 1 {
		return envCall(v[0])
	}
	out := hclwrite.Tokens{{Type: hclsyntax.TokenOQuote, Bytes: []byte(`"`)}}
	for _, p := range v {
		if p.Env == "" {
			lit := hclwrite.TokensForValue(cty.StringVal(p.Text)) // OQuote, QuotedLit (escaped), CQuote
			out = append(out, lit[1:len(lit)-1]...)
			continue
		}
		out = append(out, &hclwrite.Token{Type: hclsyntax.TokenTemplateInterp, Bytes: []byte("${")})
		out = append(out, envCall(p)...)
		out = append(out, &hclwrite.Token{Type: hclsyntax.TokenTemplateSeqEnd, Bytes: []byte("}")})
	}
	return append(out, &hclwrite.Token{Type: hclsyntax.TokenCQuote, Bytes: []byte(`"`)})
}

func envCall(p Part) hclwrite.Tokens {
	args := []hclwrite.Tokens{hclwrite.TokensForValue(cty.StringVal(p.Env))}
	if p.HasDefault {
		args = append(args, hclwrite.TokensForValue(cty.StringVal(p.Default)))
	}
	return hclwrite.TokensForFunctionCall("env", args...)
}

// Report is what an import tells its user beside the definitions: the
// variables to set and the notes.
func (r *Result) Report() string {
	var b strings.Builder
	if len(r.Env) > 0 {
		b.WriteString("Set these environment variables where mcphost runs:\n")
		for _, e := range r.Env {
			mark := ""
			switch {
			case e.InSource:
				mark = " (a secret: its value is in the source file, and not written here)"
			case e.Secret:
				mark = " (a secret)"
			}
			fmt.Fprintf(&b, "  %s  %s%s\n", e.Name, e.Why, mark)
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("Not carried over, or to do by hand:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	return b.String()
}
