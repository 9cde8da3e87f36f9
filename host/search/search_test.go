package search

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
)

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"read_text_file", []string{"read", "text", "file"}},
		{"excludePatterns", []string{"exclud", "pattern"}},
		{"HTTPServer2Go", []string{"http", "server", "2", "go"}},
		{"gosdk__greet_with_Icons_", []string{"gosdk", "greet", "icon"}},
		{"get-tiny-image", []string{"get", "tini", "imag"}},
		{"Deletes the notes", []string{"delet", "note"}},
		{"", nil},
	} {
		if got := words(c.in); !slices.Equal(got, c.want) {
			t.Errorf("words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func tool(server, name, title, desc string) abi.Tool {
	return abi.Tool{Name: server + "__" + name, Server: server, Tool: name, Title: title, Description: desc}
}

func names(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Tool.Name)
	}
	return out
}

// TestScopeAppliesTheView searches through a view: a tool the view does
// not have is never found, and a tool whose description the view's
// policies changed is found by its new words, not its old ones.
func TestScopeAppliesTheView(t *testing.T) {
	cat := []abi.Tool{
		tool("fs", "delete_file", "Delete file", "Removes a file for good."),
		tool("fs", "read_file", "Read file", "Returns a file's contents."),
		tool("db", "drop_table", "Drop table", "Removes a table."),
	}
	ix := new(Indexer).For(1, cat)
	if got := names(NewScope(ix, cat).Search("remove", 5)); !slices.Contains(got, "db__drop_table") {
		t.Fatalf("whole catalog: %v, want drop_table among them", got)
	}
	view := []abi.Tool{cat[0], cat[1]}
	view[1].Description = "Shows a document's words, in a zebra font."
	s := NewScope(ix, view)
	if got := names(s.Search("remove table", 5)); slices.Contains(got, "db__drop_table") {
		t.Errorf("a tool outside the view was found: %v", got)
	}
	if got := names(s.Search("zebra", 5)); !slices.Equal(got, []string{"fs__read_file"}) {
		t.Errorf("search by the view's description: %v", got)
	}
	if got := names(s.Search("contents", 5)); slices.Contains(got, "fs__read_file") {
		t.Errorf("found by the description the view replaced: %v", got)
	}
}

// TestIndexerFollowsTheCatalog rebuilds for a new catalog version, keeps
// the index of an unchanged one, and drops the tools that went.
func TestIndexerFollowsTheCatalog(t *testing.T) {
	var x Indexer
	v1 := []abi.Tool{tool("a", "ping", "", "Checks that the server answers.")}
	ix1 := x.For(1, v1)
	if x.For(1, v1) != ix1 {
		t.Error("same version, new index")
	}
	v2 := append(v1, tool("b", "weather", "", "Forecast for a city."))
	ix2 := x.For(2, v2)
	if got := names(NewScope(ix2, v2).Search("forecast", 5)); !slices.Equal(got, []string{"b__weather"}) {
		t.Errorf("after a server came: %v", got)
	}
	ix3 := x.For(3, v2[1:])
	if got := names(NewScope(ix3, v2[1:]).Search("server answers", 5)); len(got) != 0 {
		t.Errorf("after a server went: %v", got)
	}
	if len(x.cache) != 1 {
		t.Errorf("%d analyses cached, want the one tool left", len(x.cache))
	}
}

func TestSearchLimitAndOrder(t *testing.T) {
	var cat []abi.Tool
	for i := range 20 {
		cat = append(cat, tool("s", fmt.Sprintf("report_%02d", i), "", strings.Repeat("report ", i+1)+"filler words here"))
	}
	hits := NewScope(new(Indexer).For(1, cat), cat).Search("report", 3)
	if len(hits) != 3 {
		t.Fatalf("%d hits, want 3", len(hits))
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("hits not best first: %v", names(hits))
		}
	}
}

func TestDecodeSearch(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    SearchInput
		wantErr string
	}{
		{`{"query":"delete a file"}`, SearchInput{"delete a file", DefaultLimit}, ""},
		{`{"query":"x","limit":3}`, SearchInput{"x", 3}, ""},
		{`{"query":"x","limit":3.0}`, SearchInput{}, "limit"},
		{`{"query":"x","limit":0}`, SearchInput{}, "limit"},
		{`{"query":"x","limit":51}`, SearchInput{}, "limit"},
		{`{"query":"x","limit":"5"}`, SearchInput{}, "limit"},
		{`{"query":"x","limit":null}`, SearchInput{"x", DefaultLimit}, ""},
		{`{"query":"  "}`, SearchInput{}, "required"},
		{`{}`, SearchInput{}, "required"},
		{``, SearchInput{}, "required"},
		{`{"query":1}`, SearchInput{}, "wrong type"},
		{`{"query":"x","q":"y"}`, SearchInput{}, "unknown argument"},
		{`[]`, SearchInput{}, "object"},
		{`{"query":"` + strings.Repeat("a", 1001) + `"}`, SearchInput{}, "at most"},
	} {
		got, err := DecodeSearch(json.RawMessage(c.in))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("DecodeSearch(%.40s) error %v, want one with %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("DecodeSearch(%s) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestDecodeCallAndDescribe(t *testing.T) {
	if in, err := DecodeCall(json.RawMessage(`{"name":"a__b","arguments":{"x":1}}`)); err != nil || in.Name != "a__b" || string(in.Arguments) != `{"x":1}` {
		t.Errorf("DecodeCall = %+v, %v", in, err)
	}
	for _, bad := range []string{`{"arguments":{}}`, `{"name":"a","arguments":[1]}`, `{"name":"a","extra":1}`} {
		if _, err := DecodeCall(json.RawMessage(bad)); err == nil {
			t.Errorf("DecodeCall(%s) accepted", bad)
		}
	}
	if n, err := DecodeDescribe(json.RawMessage(`{"names":["a","b"]}`)); err != nil || len(n) != 2 {
		t.Errorf("DecodeDescribe = %v, %v", n, err)
	}
	for _, bad := range []string{`{"names":[]}`, `{"names":"a"}`, `{}`} {
		if _, err := DecodeDescribe(json.RawMessage(bad)); err == nil {
			t.Errorf("DecodeDescribe(%s) accepted", bad)
		}
	}
}

// TestSessionHandle runs the three tools against a view: search answers
// in text and structured content and grows the session's listing once,
// describe knows only the view's tools, call_tool calls through.
func TestSessionHandle(t *testing.T) {
	view := []abi.Tool{
		tool("fs", "delete_file", "Delete file", "Removes a file for good. It cannot be undone."),
		tool("clock", "now", "Current time", "The time in a zone."),
	}
	scope := NewScope(new(Indexer).For(1, view), view)
	var found Found
	changed := 0
	var called string
	s := &Session{
		Scope: func() *Scope { return scope }, Found: &found, Always: []string{"clock__*"},
		ListChanged: func() { changed++ },
		Call: func(_ context.Context, name string, _ json.RawMessage) (mcp.Result, error) {
			called = name
			return &mcp.CallToolResult{}, nil
		},
	}
	ctx := context.Background()
	res, err := s.Handle(ctx, SearchToolName, json.RawMessage(`{"query":"erase a document"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*mcp.CallToolResult)
	b, _ := json.Marshal(r.StructuredContent)
	if r.IsError || !strings.Contains(string(b), `"name":"fs__delete_file","title":"Delete file","description":"Removes a file for good."`) {
		t.Errorf("search result %s", b)
	}
	if txt := r.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(txt, "fs__delete_file (Delete file): Removes a file for good.\n") {
		t.Errorf("search text %q", txt)
	}
	_, _ = s.Handle(ctx, SearchToolName, json.RawMessage(`{"query":"erase a document"}`))
	if changed != 1 || !found.Has("fs__delete_file") {
		t.Errorf("list changed %d times (want once), found %v", changed, found.names)
	}
	_, _ = s.Handle(ctx, SearchToolName, json.RawMessage(`{"query":"time in a zone"}`))
	if changed != 1 || found.Has("clock__now") {
		t.Errorf("a tool always listed grew the listing")
	}
	list, _ := List(view, s.Always, &found)
	var listed []string
	for _, lt := range list.Tools {
		listed = append(listed, lt.Name)
	}
	if want := []string{SearchToolName, DescribeToolName, CallToolName, "fs__delete_file", "clock__now"}; !slices.Equal(listed, want) {
		t.Errorf("listing %v, want %v", listed, want)
	}
	res, _ = s.Handle(ctx, DescribeToolName, json.RawMessage(`{"names":["clock__now","db__secret"]}`))
	b, _ = json.Marshal(res.(*mcp.CallToolResult).StructuredContent)
	if !strings.Contains(string(b), `"name":"clock__now"`) || !strings.Contains(string(b), `"unknown":["db__secret"]`) {
		t.Errorf("describe %s", b)
	}
	if _, err := s.Handle(ctx, CallToolName, json.RawMessage(`{"name":"fs__delete_file","arguments":{}}`)); err != nil || called != "fs__delete_file" {
		t.Errorf("call_tool called %q, %v", called, err)
	}
	res, _ = s.Handle(ctx, CallToolName, json.RawMessage(`{"name":"call_tool"}`))
	if !res.(*mcp.CallToolResult).IsError {
		t.Error("call_tool called itself")
	}
	res, _ = s.Handle(ctx, SearchToolName, json.RawMessage(`{"query":5}`))
	if !res.(*mcp.CallToolResult).IsError {
		t.Error("bad input is not a tool error")
	}
}

func TestShort(t *testing.T) {
	if got := short("One.  Two."); got != "One." {
		t.Errorf("short = %q", got)
	}
	long := strings.Repeat("é word ", 100)
	if got := short(long); len(got) > shortDescription+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("short(long) = %q", got)
	}
}

func TestCheckExposure(t *testing.T) {
	for _, c := range []struct {
		tc catalog.ToolsConfig
		ok bool
	}{
		{catalog.ToolsConfig{}, true},
		{catalog.ToolsConfig{Exposure: catalog.ExposureSearch, Always: []string{"a__*", "b__c"}}, true},
		{catalog.ToolsConfig{Exposure: "serch"}, false},
		{catalog.ToolsConfig{Exposure: catalog.ExposureSearch, Always: []string{"a["}}, false},
		{catalog.ToolsConfig{Always: []string{""}}, false},
	} {
		if err := CheckExposure(c.tc); (err == nil) != c.ok {
			t.Errorf("CheckExposure(%+v) = %v", c.tc, err)
		}
	}
}

// TestConcurrentSearch hammers one Indexer from many goroutines while the
// catalog moves on: each searches its own view, through a ScopeCache
// shared with the others, of the version it saw (run with -race).
func TestConcurrentSearch(t *testing.T) {
	cat := loadCatalog(t)
	var x Indexer
	var cache ScopeCache
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				version := uint64(i/10 + 1)
				tools := cat[:len(cat)-int(version)]
				s := cache.Get(x.For(version, tools), tools)
				if hits := s.Search("delete a file", 3); len(hits) == 0 && g == 0 {
					t.Error("no hit")
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}

func TestShapeTerms(t *testing.T) {
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"what is 9am in Paris", []string{term("time")}},
		{"8:30 pm in Madrid", []string{term("time")}},
		{"at 9 p.m. tonight", []string{term("time")}},
		{"the date 10 days after 2026-12-25", []string{term("date")}},
		{"from Jan 1 to March 3", []string{term("date")}},
		{"what is 17 + 25", []string{term("sum")}},
		{"compute 17+25", []string{term("sum")}},
		{"rename c++ files", nil},
		{"may I delete a file", nil},
		{"due May 3", []string{term("date")}},
		{"version 1:2:3 of the api", nil},
		{"", nil},
	} {
		if got := shapeTerms(c.q); !slices.Equal(got, c.want) {
			t.Errorf("shapeTerms(%q) = %q, want %q", c.q, got, c.want)
		}
	}
}
