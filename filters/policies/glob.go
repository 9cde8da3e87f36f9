package policies

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A glob is a pattern over names (of tools, prompts and servers), resource
// URIs and URI templates, and MCP method names: '*' matches any run of
// characters (also none, and '/' too), '?' any one character, '\' makes
// the next character literal; everything else matches itself. Names are
// matched whole. There are no character classes: operators list
// alternatives instead.
type glob struct {
	src  string
	toks []globTok
}

type globTok struct {
	kind byte // 'l' literal, '?' any one, '*' any run
	lit  string
}

// maxGlob bounds a pattern's length, so a configuration cannot make
// matching slow.
const maxGlob = 1024

// compileGlob parses a pattern; the only errors are an empty or overlong
// pattern and a trailing backslash.
func compileGlob(p string) (glob, error) {
	g := glob{src: p}
	switch {
	case p == "":
		return g, fmt.Errorf("empty pattern")
	case len(p) > maxGlob:
		return g, fmt.Errorf("pattern longer than %d bytes", maxGlob)
	}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			g.toks = append(g.toks, globTok{kind: 'l', lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 == len(p) {
				return g, fmt.Errorf("pattern %q ends in a backslash", p)
			}
			i++
			lit.WriteByte(p[i])
		case '*':
			flush()
			if n := len(g.toks); n == 0 || g.toks[n-1].kind != '*' {
				g.toks = append(g.toks, globTok{kind: '*'})
			}
		case '?':
			flush()
			g.toks = append(g.toks, globTok{kind: '?'})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return g, nil
}

// match reports whether name matches the whole pattern. It backtracks only
// to the last star, so it runs in O(len(pattern) * len(name)).
func (g glob) match(name string) bool {
	toks := g.toks
	ti, ni := 0, 0
	starT, starN := -1, 0
	for {
		if ti < len(toks) {
			t := toks[ti]
			switch t.kind {
			case '*':
				starT, starN = ti, ni
				ti++
				continue
			case '?':
				if ni < len(name) {
					_, size := decodeRune(name[ni:])
					ti, ni = ti+1, ni+size
					continue
				}
			case 'l':
				if strings.HasPrefix(name[ni:], t.lit) {
					ti, ni = ti+1, ni+len(t.lit)
					continue
				}
			}
		} else if ni == len(name) {
			return true
		}
		// Mismatch: let the last star take one more character.
		if starT < 0 || starN >= len(name) {
			return false
		}
		_, size := decodeRune(name[starN:])
		starN += size
		ti, ni = starT+1, starN
	}
}

func decodeRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }

// globs is a list of patterns; it matches a name if any pattern does.
type globs []glob

func compileGlobs(key string, patterns []string) (globs, error) {
	gs := make(globs, 0, len(patterns))
	for _, p := range patterns {
		g, err := compileGlob(p)
		if err != nil {
			return nil, fmt.Errorf("config %q: %w", key, err)
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// match returns the first pattern matching any of names, or "".
func (gs globs) match(names ...string) (string, bool) {
	for _, g := range gs {
		for _, n := range names {
			if g.match(n) {
				return g.src, true
			}
		}
	}
	return "", false
}
