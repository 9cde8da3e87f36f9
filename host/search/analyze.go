package search

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"

	"github.com/mcphost-project/mcphost/abi"
)

// The fields of a tool that are indexed, each with its weight in the
// ranking (weights, in rank.go).
const (
	fieldName       = iota // the tool's own name, split into words
	fieldTitle             // its title (or its annotations' title)
	fieldDesc              // its description
	fieldParams            // its parameters' names
	fieldParamDescs        // its parameters' descriptions and enum values
	fieldServer            // the server's name
	numFields
)

// maxFieldText bounds how much of one field is analysed: a description of
// a megabyte says no more to a search than its first 8 KB.
const maxFieldText = 8 << 10

// maxTermLen bounds one term: longer "words" are hashes and data.
const maxTermLen = 40

// analysed is one tool as the index sees it: each field's terms with their
// counts, and each field's length in terms.
type analysed struct {
	terms map[string][numFields]uint16
	lens  [numFields]uint16
}

// analyse splits and stems every indexed field of t.
func analyse(t *abi.Tool) *analysed {
	a := &analysed{terms: make(map[string][numFields]uint16)}
	server := words(t.Server)
	a.add(fieldServer, server)
	a.add(fieldName, trimPrefix(words(t.Name), server))
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	a.add(fieldTitle, words(title))
	a.add(fieldDesc, words(t.Description))
	names, descs := schemaText(t.InputSchema)
	a.add(fieldParams, names)
	a.add(fieldParamDescs, descs)
	return a
}

func (a *analysed) add(field int, ws []string) {
	for _, w := range ws {
		if a.lens[field] == 1<<16-1 {
			return
		}
		c := a.terms[w]
		c[field]++
		a.terms[w] = c
		a.lens[field]++
	}
}

// trimPrefix drops the server's words from the front of an exposed name's
// (server "github", name "github__create_issue": create, issue); a name
// without them is kept whole.
func trimPrefix(name, server []string) []string {
	if len(server) == 0 || len(name) <= len(server) {
		return name
	}
	for i, w := range server {
		if name[i] != w {
			return name
		}
	}
	return name[len(server):]
}

// schemaText returns the words of the property names of an input schema
// (top level and one level down), and those of their descriptions, titles
// and string enum values.
func schemaText(raw json.RawMessage) (names, descs []string) {
	if len(raw) == 0 {
		return nil, nil
	}
	var s schemaNode
	if json.Unmarshal(raw, &s) != nil {
		return nil, nil
	}
	var walk func(s *schemaNode, depth int)
	walk = func(s *schemaNode, depth int) {
		for name, p := range s.Properties {
			names = append(names, words(name)...)
			descs = append(descs, words(p.Description)...)
			descs = append(descs, words(p.Title)...)
			for _, e := range p.Enum {
				if str, ok := e.(string); ok {
					descs = append(descs, words(str)...)
				}
			}
			if depth == 0 {
				walk(&p, 1)
				if p.Items != nil {
					walk(p.Items, 1)
				}
			}
		}
	}
	walk(&s, 0)
	return names, descs
}

// schemaNode is what schemaText reads of a JSON schema.
type schemaNode struct {
	Properties  map[string]schemaNode `json:"properties"`
	Items       *schemaNode           `json:"items"`
	Description string                `json:"description"`
	Title       string                `json:"title"`
	Enum        []any                 `json:"enum"`
}

// words splits text into stemmed terms: at every character that is not a
// letter or digit, between a lower-case letter and an upper-case one
// (camelCase), before the last capital of a run followed by a lower-case
// letter (HTTPServer: http, server) and between letters and digits; then
// lower-cased, stop words dropped and stemmed (Snowball English).
func words(text string) []string {
	if len(text) > maxFieldText {
		text = text[:maxFieldText]
	}
	var out []string
	start := -1
	var prev rune
	flush := func(end int) {
		if start >= 0 {
			if w := term(text[start:end]); w != "" {
				out = append(out, w)
			}
		}
		start = -1
	}
	for i, r := range text {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev = 0
			continue
		}
		if start >= 0 && splitCase && boundary(prev, r, text[i+utf8.RuneLen(r):]) {
			flush(i)
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	flush(len(text))
	return out
}

// boundary reports whether a word ends between prev and r, with rest the
// text after r.
func boundary(prev, r rune, rest string) bool {
	switch {
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	}
	return false
}

// term is one word as indexed and searched: lower case and stemmed, or ""
// for a stop word or a word too long to be one.
func term(w string) string {
	if len(w) > maxTermLen {
		return ""
	}
	w = strings.ToLower(w)
	if english.IsStopWord(w) {
		return ""
	}
	if !stemming {
		return w
	}
	return stem(w)
}

// stems remembers the stems of words seen: a catalog repeats its words,
// and stemming is most of what analysing a tool costs.
var stems struct {
	sync.RWMutex
	m map[string]string
}

// maxStems bounds the words remembered; past it, words are stemmed anew.
const maxStems = 1 << 16

func stem(w string) string {
	stems.RLock()
	s, ok := stems.m[w]
	stems.RUnlock()
	if ok {
		return s
	}
	s = english.Stem(w, true)
	stems.Lock()
	if stems.m == nil {
		stems.m = make(map[string]string)
	}
	if len(stems.m) < maxStems {
		stems.m[strings.Clone(w)] = s
	}
	stems.Unlock()
	return s
}
