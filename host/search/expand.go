package search

import (
	"regexp"
	"strings"
)

// synonyms are groups of words that tool catalogs and the people (and
// models) who search them use for one idea. A query's word also searches
// for the other words of its groups, at expandWeight: a model asks for a
// "folder" where a server says "directory", or to "remove" what a tool
// "deletes". The groups are general software vocabulary, written before
// the held-out queries (testdata/queries.json) and never for one tool.
var synonyms = []string{
	"folder directory dir mkdir",
	"file document doc",
	"make create new generate add mkdir",
	"add append insert attach",
	"remove delete erase drop forget discard destroy purge rm",
	"read view show display print see cat",
	"read open load",
	"get fetch retrieve obtain",
	"list enumerate all every ls show",
	"write save store persist record put remember",
	"edit modify change patch update alter replace",
	"overwrite replace",
	"move rename relocate mv",
	"search find look locate query lookup match grep filter",
	"pattern glob wildcard extension suffix",
	"note memo",
	"relation relationship link connection edge associate",
	"entity node person people organisation organization item",
	"observation fact",
	"time hour clock",
	"now current today present",
	"convert translate",
	"zone timezone",
	"duration interval period span later after",
	"image picture photo logo icon screenshot png jpeg jpg gif svg",
	"audio sound media",
	"compress gzip zip shrink archive smaller",
	"ping alive health heartbeat responsive reachable",
	"greet hello hi welcome",
	"echo repeat mirror",
	"sum add plus total",
	"environment env variable",
	"log logging diagnostic debug",
	"elicit elicitation ask question input",
	"form field",
	"url browser web page link",
	"sample sampling llm model completion",
	"size big bytes large biggest largest",
	"permission access allowed permitted",
	"graph knowledge memory",
	"research investigate investigation study",
	"simulate simulated fake mock dummy demo demonstrate",
	"tree hierarchy nested recursive",
	"metadata info information detail stat",
	"content contents text body",
	"count number many",
	"progress slow long running",
	"resource uri item",
	"root workspace",
}

// expandWeight is how much a synonym counts next to the query's own word.
const expandWeight = 0.5

// expansions maps a stemmed word to the stemmed words of its groups.
var expansions = buildExpansions(synonyms)

func buildExpansions(groups []string) map[string][]string {
	m := map[string][]string{}
	for _, g := range groups {
		var stems []string
		for _, w := range strings.Fields(g) {
			if t := term(w); t != "" {
				stems = append(stems, t)
			}
		}
		for _, s := range stems {
			for _, o := range stems {
				if o != s {
					m[s] = append(m[s], o)
				}
			}
		}
	}
	return m
}

// Shapes in a query that name an idea its words do not: a clock time
// (15:00, 9am, 9 pm), a date (2026-03-01, or a month's name), and a plus
// sign between numbers.
var (
	clockTime = regexp.MustCompile(`(?i)\b\d{1,2}(:\d{2}\b|\s?[ap]\.?m\b)`)
	isoDate   = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)
	monthName = regexp.MustCompile(`(?i)\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(tember)?|oct(ober)?|nov(ember)?|dec(ember)?)\b`)
	plusSign  = regexp.MustCompile(`\d\s*\+\s*\d`)
)

// shapeTerms returns the terms that the shapes of query stand for.
func shapeTerms(query string) []string {
	var out []string
	if clockTime.MatchString(query) {
		out = append(out, term("time"))
	}
	if isoDate.MatchString(query) || monthName.MatchString(query) {
		out = append(out, term("date"))
	}
	if plusSign.MatchString(query) {
		out = append(out, term("sum"))
	}
	return out
}
