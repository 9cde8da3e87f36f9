package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcphost-project/mcphost/internal/suggest"
)

func didYouMean(given string, candidates []string) string {
	return suggest.DidYouMean(given, candidates)
}

// misspelled reports whether block has an argument outside schema whose
// nearest valid name is want. HCL already reports that argument with the
// suggestion; saying "want is missing" as well would be the same mistake
// twice.
func misspelled(block *hcl.Block, schema *hcl.BodySchema, want string) bool {
	body, ok := block.Body.(*hclsyntax.Body)
	if !ok {
		return false
	}
	valid := make([]string, len(schema.Attributes))
	for i, a := range schema.Attributes {
		valid[i] = a.Name
	}
	for name := range body.Attributes {
		if suggest.Nearest(name, valid) == want && name != want {
			return true
		}
	}
	return false
}
