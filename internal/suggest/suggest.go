// Package suggest finds the name a user probably meant, for "did you mean"
// hints in errors about configuration and names.
package suggest

import (
	"fmt"

	"github.com/agext/levenshtein"
)

// typoDistance is the edit distance under which a name counts as a typo of
// another: the threshold HCL uses for its own suggestions, so all hints
// feel alike.
const typoDistance = 3

// Nearest returns the candidate nearest to given, or "" when none is close
// enough to be a plausible typo.
func Nearest(given string, candidates []string) string {
	best, bestDist := "", typoDistance
	for _, c := range candidates {
		if dist := levenshtein.Distance(given, c, nil); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	return best
}

// DidYouMean returns ` Did you mean "x"?` for the nearest candidate, or "".
func DidYouMean(given string, candidates []string) string {
	if best := Nearest(given, candidates); best != "" {
		return fmt.Sprintf(" Did you mean %q?", best)
	}
	return ""
}
