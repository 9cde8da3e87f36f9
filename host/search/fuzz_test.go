package search

import (
	"encoding/json"
	"github.com/mcphost-project/mcphost/abi"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeSearch feeds search_tools' decoder any bytes: it never
// panics, and what it accepts is within its bounds and searchable.
func FuzzDecodeSearch(f *testing.F) {
	for _, s := range []string{`{"query":"delete a file"}`, `{"query":"x","limit":50}`, `{"query":"\u00e9\ud800","limit":1e2}`, `null`, `{"query":"a","limit":-1}`, `[{"query":1}]`} {
		f.Add([]byte(s))
	}
	tools := []abi.Tool{tool("fs", "read_file", "Read", "Reads a file.")}
	scope := NewScope(new(Indexer).For(1, tools), tools)
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := DecodeSearch(json.RawMessage(b))
		if err != nil {
			return
		}
		if in.Query == "" || len(in.Query) > maxQueryBytes || in.Limit < 1 || in.Limit > MaxLimit {
			t.Fatalf("accepted %+v from %q", in, b)
		}
		if hits := scope.Search(in.Query, in.Limit); len(hits) > in.Limit {
			t.Fatalf("%d hits for limit %d", len(hits), in.Limit)
		}
		_ = utf8.ValidString(in.Query)
	})
}

// FuzzDecodeCall does the same for call_tool's and describe_tools'.
func FuzzDecodeCall(f *testing.F) {
	for _, s := range []string{`{"name":"a","arguments":{"x":[1]}}`, `{"names":["a"]}`, `{"name":"a","arguments":null}`, `{"arguments":" {}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if in, err := DecodeCall(json.RawMessage(b)); err == nil {
			if in.Name == "" || (in.Arguments != nil && in.Arguments[0] != '{') {
				t.Fatalf("accepted %+v from %q", in, b)
			}
		}
		if names, err := DecodeDescribe(json.RawMessage(b)); err == nil && (len(names) == 0 || len(names) > maxDescribe) {
			t.Fatalf("accepted %d names from %q", len(names), b)
		}
	})
}

// FuzzWords splits any text into terms without panicking, each term
// non-empty and bounded.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"read_text_file", "HTTPServer2Go", "ünïcödé wörds", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range words(s) {
			if w == "" || len(w) > maxTermLen {
				t.Fatalf("term %q from %q", w, s)
			}
		}
		_ = queryTerms(s)
	})
}
