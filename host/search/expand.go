package search

import (
	"strings"
	"sync"
	"unicode"
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

// expansions maps a stemmed word to the stemmed words of its groups. It
// is built on the first search, not at start-up: stemming the groups
// allocates some 100 KB that a config without search never needs.
var expansions = sync.OnceValue(func() map[string][]string { return buildExpansions(synonyms) })

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

// shapeTerms returns the terms that shapes in a query stand for, which its
// words do not name: a clock time (15:00, 9am, 9 pm) stands for "time", a
// date (2026-03-01, or a month's name) for "date", and a plus sign between
// numbers for "sum".
func shapeTerms(query string) []string {
	var clock, date, plus bool
	fields := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ':' && r != '-' && r != '+' && r != '.'
	})
	for i, f := range fields {
		f = strings.Trim(f, ".")
		digits := len(f) - len(strings.TrimLeft(f, "0123456789"))
		rest := f[digits:]
		switch {
		case digits >= 1 && digits <= 2 && len(rest) == 3 && rest[0] == ':' && isDigits(rest[1:]):
			clock = true
		case digits >= 1 && digits <= 2 && (rest == "am" || rest == "pm" || rest == "a.m" || rest == "p.m"):
			clock = true
		case digits >= 1 && digits <= 2 && rest == "" && i+1 < len(fields) && meridiem[strings.Trim(fields[i+1], ".")]:
			clock = true
		case digits == 4 && len(rest) == 6 && rest[0] == '-' && rest[3] == '-' && isDigits(rest[1:3]) && isDigits(rest[4:]):
			date = true
		case months[f] && (f != "may" || i+1 < len(fields) && isDigits(fields[i+1][:1])):
			date = true // "may" only before a number: it is a verb more often
		}
		if strings.Contains(f, "+") {
			l, r, _ := strings.Cut(f, "+")
			prevDigit := l != "" && isDigits(l[len(l)-1:]) || l == "" && i > 0 && isDigits(lastByte(fields[i-1]))
			nextDigit := r != "" && isDigits(r[:1]) || r == "" && i+1 < len(fields) && isDigits(fields[i+1][:1])
			plus = plus || prevDigit && nextDigit
		}
	}
	var out []string
	for _, s := range []struct {
		ok   bool
		word string
	}{{clock, "time"}, {date, "date"}, {plus, "sum"}} {
		if s.ok {
			out = append(out, term(s.word))
		}
	}
	return out
}

var (
	meridiem = map[string]bool{"am": true, "pm": true, "a.m": true, "p.m": true}
	months   = map[string]bool{}
)

func init() {
	for _, m := range strings.Fields("january february march april may june july august september october november december") {
		months[m] = true
		months[m[:3]] = true
	}
	months["sept"] = true
}

func isDigits(s string) bool {
	return s != "" && strings.TrimLeft(s, "0123456789") == ""
}

func lastByte(s string) string {
	if s == "" {
		return ""
	}
	return s[len(s)-1:]
}
