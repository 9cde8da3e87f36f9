package search

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestRankingVariants measures the ranking's parts one by one, from plain
// BM25 over one field to the ranking as shipped, on the labelled queries:
// the figures docs/BENCHMARKS.md and docs/RATIONALE.md cite. It only
// reports; TestAccuracy holds the bar.
func TestRankingVariants(t *testing.T) {
	tools := loadCatalog(t)
	queries := loadQueries(t)
	shipped := struct {
		w, b        [numFields]float64
		split, stem bool
		expand      bool
	}{fieldWeight, fieldB, splitCase, stemming, expandQueries}
	defer func() {
		fieldWeight, fieldB, splitCase, stemming, expandQueries = shipped.w, shipped.b, shipped.split, shipped.stem, shipped.expand
		expansions = builtExpansions()
	}()
	flat := [numFields]float64{1, 1, 1, 1, 1, 1}
	flatB := [numFields]float64{0.75, 0.75, 0.75, 0.75, 0.75, 0.75}
	steps := []struct {
		name        string
		w, b        [numFields]float64
		split, stem bool
		expand      bool
	}{
		{"BM25, one weight for every field, words split at punctuation only", flat, flatB, false, false, false},
		{"+ camelCase and digit splitting", flat, flatB, true, false, false},
		{"+ Snowball stemming", flat, flatB, true, true, false},
		{"+ field weights (BM25F)", shipped.w, shipped.b, true, true, false},
		{"+ synonyms and query shapes (shipped)", shipped.w, shipped.b, true, true, true},
	}
	for _, st := range steps {
		fieldWeight, fieldB, splitCase, stemming, expandQueries = st.w, st.b, st.split, st.stem, st.expand
		expansions = builtExpansions()
		s := NewScope(new(Indexer).For(1, tools), tools)
		sets := map[string]*accuracy{"all": {}}
		for _, q := range queries {
			var names []string
			for _, h := range s.Search(q.Query, 5) {
				names = append(names, h.Tool.Name)
			}
			if sets[q.Set] == nil {
				sets[q.Set] = &accuracy{}
			}
			for _, a := range []*accuracy{sets[q.Set], sets["all"]} {
				a.n++
				if len(names) > 0 && slices.Contains(q.Want, names[0]) {
					a.top1++
				}
				if slices.ContainsFunc(names, func(n string) bool { return slices.Contains(q.Want, n) }) {
					a.top5++
				}
			}
		}
		var b strings.Builder
		for _, set := range slices.Sorted(maps.Keys(sets)) {
			fmt.Fprintf(&b, "\n\t%-15s %v", set, sets[set])
		}
		t.Logf("%s%s", st.name, b.String())
	}
}

// builtExpansions builds the synonym table anew, under the current
// splitting and stemming switches, for expansions to return.
func builtExpansions() func() map[string][]string {
	m := buildExpansions(synonyms)
	return func() map[string][]string { return m }
}
