package config

import (
	"fmt"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// didYouMean returns ` Did you mean "x"?` for the candidate nearest to given,
// or "" when none is close enough to be a plausible typo. The threshold is
// the one HCL uses for its own suggestions, so all hints feel alike.
func didYouMean(given string, candidates []string) string {
	if best := nearest(given, candidates); best != "" {
		return fmt.Sprintf(" Did you mean %q?", best)
	}
	return ""
}

func nearest(given string, candidates []string) string {
	best, bestDist := "", typoDistance
	for _, c := range candidates {
		if dist := levenshtein.Distance(given, c, nil); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	return best
}

const typoDistance = 3

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
		if nearest(name, valid) == want && name != want {
			return true
		}
	}
	return false
}
