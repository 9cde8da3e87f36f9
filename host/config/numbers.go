package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// maxNumberExp bounds number literals to a little beyond float64. cty keeps
// arbitrary precision, and turning 1e9999999 into text (for a string or a
// plugin config value) takes seconds and megabytes; no setting needs it.
const maxNumberExp = 1100 // binary exponent; float64 tops out at 1024

// checkNumbers reports number literals too large or too small to mean
// anything here, before any of them is evaluated, and makes each such
// literal an unknown number: decoding then goes on to report the file's
// other mistakes, and an attribute holding one reads as failed (reported),
// as after an unset env().
func checkNumbers(body *hclsyntax.Body) hcl.Diagnostics {
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		lit, ok := n.(*hclsyntax.LiteralValueExpr)
		if !ok || lit.Val.Type() != cty.Number || lit.Val.IsNull() {
			return nil
		}
		bf := lit.Val.AsBigFloat()
		if bf.Sign() == 0 || bf.IsInf() {
			return nil
		}
		if exp := bf.MantExp(nil); exp > maxNumberExp || exp < -maxNumberExp {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Number out of range",
				Detail:   "This number is beyond what any setting can use (about 1e308 either way). Write a smaller one.",
				Subject:  lit.SrcRange.Ptr(),
			})
			lit.Val = cty.UnknownVal(cty.Number)
		}
		return nil
	})
	return diags
}
