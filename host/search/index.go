package search

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mcphost-project/mcphost/abi"
)

// An Indexer keeps the index of one catalog, following it as it changes:
// For builds the index of a new catalog version from the tools' analyses,
// which it keeps across versions (a tool that did not change is not split
// and stemmed again), so a server coming or going costs the assembly of
// the postings, not the analysis of every tool. The zero value is ready.
type Indexer struct {
	cur   atomic.Pointer[Index]
	mu    sync.Mutex // serialises builds
	cache map[docKey]*analysed
}

// An Index is the immutable index of one catalog version: the tools'
// postings and the statistics BM25F needs. A caller's view is applied at
// query time (Scope), so one index serves every caller.
type Index struct {
	version uint64
	byKey   map[docKey]int32
	post    map[string][]posting
	avg     [numFields]float64 // mean field lengths
	n       int                // tools

	// variants are the pseudo frequencies of tools as views changed them
	// (a policy's titles or descriptions), shared by the views of every
	// caller; at most maxVariants.
	variantMu sync.Mutex
	variants  map[docKey]map[string]float32
}

// maxVariants bounds the changed tools an index keeps analysed, as a
// multiple of its tools; past it, each view analyses its own.
const maxVariants = 4

// posting is one tool's weight for one term: the term's counts in each
// field, weighted and normalised by the fields' lengths (BM25F's pseudo
// frequency), ready for the saturation at query time.
type posting struct {
	doc int32
	tf  float32
}

// docKey is what identifies a tool's text: a view whose policy changed a
// title or a description (or renamed the tool) has another key for it.
type docKey struct {
	server, tool, name, title, desc, schema string
}

func keyOf(t *abi.Tool) docKey {
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	return docKey{t.Server, t.Tool, t.Name, title, t.Description, string(t.InputSchema)}
}

// For returns the index of catalog version, building it from tools (the
// catalog's, in its order) if the current one is of another version.
func (x *Indexer) For(version uint64, tools []abi.Tool) *Index {
	if ix := x.cur.Load(); ix != nil && ix.version == version {
		return ix
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if ix := x.cur.Load(); ix != nil && ix.version == version {
		return ix
	}
	next := make(map[docKey]*analysed, len(tools))
	docs := make([]*analysed, len(tools))
	for i := range tools {
		k := keyOf(&tools[i])
		a := x.cache[k]
		if a == nil {
			a = analyse(&tools[i])
		}
		next[k] = a
		docs[i] = a
	}
	x.cache = next // analyses of tools gone are dropped
	ix := build(version, tools, docs)
	x.cur.Store(ix)
	return ix
}

// build assembles the postings of docs, the analyses of tools.
func build(version uint64, tools []abi.Tool, docs []*analysed) *Index {
	ix := &Index{version: version, byKey: make(map[docKey]int32, len(tools)), post: make(map[string][]posting), n: len(docs)}
	for i := range tools {
		ix.byKey[keyOf(&tools[i])] = int32(i)
	}
	for _, d := range docs {
		for f := range numFields {
			ix.avg[f] += float64(d.lens[f])
		}
	}
	for f := range numFields {
		if ix.n > 0 {
			ix.avg[f] /= float64(ix.n)
		}
	}
	for i, d := range docs {
		for t, counts := range d.terms {
			ix.post[t] = append(ix.post[t], posting{doc: int32(i), tf: ix.pseudoTF(d, counts)})
		}
	}
	return ix
}

// pseudoTF is BM25F's weighted, length-normalised frequency of a term
// with counts in a document d.
func (ix *Index) pseudoTF(d *analysed, counts [numFields]uint16) float32 {
	var tf float64
	for f, c := range counts {
		if c == 0 {
			continue
		}
		norm := 1.0
		if ix.avg[f] > 0 {
			norm = 1 - fieldB[f] + fieldB[f]*float64(d.lens[f])/ix.avg[f]
		}
		tf += fieldWeight[f] * float64(c) / norm
	}
	return float32(tf)
}

// idf is BM25's inverse document frequency of a term in df of n tools.
func idf(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// A Scope is an index seen through one caller's view: the view's tools in
// its order, each tied to its document in the index, and those whose text
// the view's policies changed analysed on their own (variants). Build one
// per view (ScopeCache) and search it as often as needed.
type Scope struct {
	ix       *Index
	tools    []abi.Tool
	inView   []int32 // per index document: its position in tools, or -1
	variants []variant
}

// variant is a tool of the view that the index does not have as it is:
// its pseudo frequencies, computed against the index's statistics.
type variant struct {
	pos int32
	tf  map[string]float32
}

// NewScope ties tools, a caller's view of the catalog ix indexes, to it.
func NewScope(ix *Index, tools []abi.Tool) *Scope {
	s := &Scope{ix: ix, tools: tools, inView: make([]int32, ix.n)}
	for i := range s.inView {
		s.inView[i] = -1
	}
	for i := range tools {
		if d, ok := ix.byKey[keyOf(&tools[i])]; ok && s.inView[d] < 0 {
			s.inView[d] = int32(i)
			continue
		}
		s.variants = append(s.variants, variant{pos: int32(i), tf: ix.variant(&tools[i])})
	}
	return s
}

// variant returns the pseudo frequencies of t, a tool the index does not
// have as it is.
func (ix *Index) variant(t *abi.Tool) map[string]float32 {
	k := keyOf(t)
	ix.variantMu.Lock()
	tf, ok := ix.variants[k]
	ix.variantMu.Unlock()
	if ok {
		return tf
	}
	a := analyse(t)
	tf = make(map[string]float32, len(a.terms))
	for term, counts := range a.terms {
		tf[term] = ix.pseudoTF(a, counts)
	}
	ix.variantMu.Lock()
	if ix.variants == nil {
		ix.variants = make(map[docKey]map[string]float32)
	}
	if len(ix.variants) < maxVariants*max(ix.n, 64) {
		ix.variants[k] = tf
	}
	ix.variantMu.Unlock()
	return tf
}

// Tools returns the view's tools, in its order.
func (s *Scope) Tools() []abi.Tool { return s.tools }

// ScopeCache keeps the scope of one view for its current index; the zero
// value is ready. A view embeds one, so a caller's scope is built once per
// view and catalog version.
type ScopeCache struct {
	mu sync.Mutex
	s  *Scope
}

// Get returns the scope of tools in ix, building it when ix is not the
// index it was built for.
func (c *ScopeCache) Get(ix *Index, tools []abi.Tool) *Scope {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil || c.s.ix != ix {
		c.s = NewScope(ix, tools)
	}
	return c.s
}

// A Hit is one tool a search found, with its score.
type Hit struct {
	Tool  *abi.Tool
	Score float64
}

// Search returns up to limit tools of the scope's view that match query
// best, best first; tools that match no word of it are not returned.
// Ties keep the view's order.
func (s *Scope) Search(query string, limit int) []Hit {
	if limit <= 0 || len(s.tools) == 0 {
		return nil
	}
	q := queryTerms(query)
	if len(q) == 0 {
		return nil
	}
	scores := make([]float64, len(s.tools))
	for _, qt := range q {
		post := s.ix.post[qt.term]
		w := qt.weight * idf(s.ix.n, len(post))
		for _, p := range post {
			if i := s.inView[p.doc]; i >= 0 {
				scores[i] += w * saturate(p.tf)
			}
		}
		for _, v := range s.variants {
			if tf, ok := v.tf[qt.term]; ok {
				scores[v.pos] += w * saturate(tf)
			}
		}
	}
	return top(s.tools, scores, limit)
}

// k1 is BM25's term-frequency saturation.
const k1 = 1.2

func saturate(tf float32) float64 { return float64(tf) / (k1 + float64(tf)) }

// top returns the limit best-scoring tools, best first, ties in view
// order.
func top(tools []abi.Tool, scores []float64, limit int) []Hit {
	var hits []Hit
	for i, sc := range scores {
		if sc <= 0 {
			continue
		}
		if len(hits) == limit && sc <= hits[limit-1].Score {
			continue
		}
		h := Hit{Tool: &tools[i], Score: sc}
		at, _ := slices.BinarySearchFunc(hits, sc, func(h Hit, sc float64) int {
			if h.Score >= sc {
				return -1
			}
			return 1
		})
		hits = slices.Insert(hits, at, h)
		if len(hits) > limit {
			hits = hits[:limit]
		}
	}
	return hits
}

// qterm is a term of a query with its weight: 1 for the query's own words,
// less for the words they are expanded to.
type qterm struct {
	term   string
	weight float64
}

// queryTerms analyses a query as the index's fields are, each term once.
func queryTerms(query string) []qterm {
	var out []qterm
	seen := map[string]int{}
	add := func(t string, w float64) {
		if i, ok := seen[t]; ok {
			out[i].weight = max(out[i].weight, w)
			return
		}
		seen[t] = len(out)
		out = append(out, qterm{t, w})
	}
	own := words(query)
	if expandQueries {
		own = append(own, shapeTerms(query)...)
	}
	for _, t := range own {
		add(t, 1)
	}
	if expandQueries {
		for _, t := range own {
			for _, e := range expansions()[t] {
				add(e, expandWeight)
			}
		}
	}
	return out
}
