package search

import (
	"fmt"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

// thousandTools is the six servers' catalog copied under 18 server names:
// 1,044 tools of real names, descriptions and schemas.
func thousandTools(b *testing.B) []abi.Tool {
	base := loadCatalog(b)
	var out []abi.Tool
	for i := 0; len(out) < 1000; i++ {
		for _, t := range base {
			t.Server = fmt.Sprintf("%s%d", t.Server, i)
			t.Name = t.Server + "__" + t.Tool
			out = append(out, t)
		}
	}
	return out
}

// BenchmarkSearch is one search_tools query over 1,044 tools, the
// caller's view already tied to the index (once per view and catalog).
func BenchmarkSearch(b *testing.B) {
	tools := thousandTools(b)
	s := NewScope(new(Indexer).For(1, tools), tools)
	queries := []string{"delete a file", "what hour is it right now in Tokyo", "remove the connection between two entities", "ask the user to fill in a form"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Search(queries[i%len(queries)], DefaultLimit)
	}
}

// BenchmarkSearchUniform is the worst case for postings: 1,000 tools
// whose descriptions share their words (as internal/bench's manytools
// server lists them), so each query term's postings hold every tool.
func BenchmarkSearchUniform(b *testing.B) {
	var tools []abi.Tool
	for s := range 10 {
		server := fmt.Sprintf("s%c", 'a'+s)
		for i := range 100 {
			tools = append(tools, abi.Tool{Server: server, Tool: fmt.Sprintf("tool_%04d", i), Name: fmt.Sprintf("%s__tool_%04d", server, i),
				Description: fmt.Sprintf("Tool number %d of the %s server. It searches the %s index for the query and returns at most limit matching records, newest first.", i, server, server)})
		}
	}
	sc := NewScope(new(Indexer).For(1, tools), tools)
	b.ReportAllocs()
	for b.Loop() {
		sc.Search("search the sf index for newest records", DefaultLimit)
	}
}

// BenchmarkScope ties a view of 1,044 tools to the index: once per view
// and catalog version. "changed" is a view whose policy rewrote every
// description, so each tool is analysed on its own.
func BenchmarkScope(b *testing.B) {
	tools := thousandTools(b)
	ix := new(Indexer).For(1, tools)
	b.Run("same", func(b *testing.B) {
		for b.Loop() {
			NewScope(ix, tools)
		}
	})
	changed := append([]abi.Tool(nil), tools...)
	for i := range changed {
		changed[i].Description += " (compacted)"
	}
	b.Run("changed", func(b *testing.B) {
		for b.Loop() {
			NewScope(ix, changed)
		}
	})
}

// BenchmarkIndex builds the index of a new catalog version of 1,044
// tools: "fresh" analyses every tool, "one changed" only the one tool
// that changed since the last version (a server came, went or relisted).
func BenchmarkIndex(b *testing.B) {
	tools := thousandTools(b)
	b.Run("fresh", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			new(Indexer).For(uint64(i+1), tools)
		}
	})
	b.Run("one changed", func(b *testing.B) {
		var x Indexer
		x.For(0, tools)
		next := append([]abi.Tool(nil), tools...)
		for i := 0; b.Loop(); i++ {
			next[0].Description = fmt.Sprintf("version %d", i)
			x.For(uint64(i+1), next)
		}
	})
}
