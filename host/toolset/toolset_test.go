package toolset

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

func TestIncludes(t *testing.T) {
	ts := &Toolset{Servers: []string{"fs", "mem"}, Tools: []string{"read_*", "create_entities"}, Exclude: []string{"*_media_*"}}
	for _, c := range []struct {
		server, tool string
		want         bool
	}{
		{"fs", "read_file", true},
		{"fs", "read_media_file", false}, // excluded
		{"mem", "create_entities", true},
		{"fs", "write_file", false}, // no glob takes it
		{"clock", "read_clock", false},
	} {
		if got := ts.Includes(c.server, c.tool); got != c.want {
			t.Errorf("Includes(%q, %q) = %v, want %v", c.server, c.tool, got, c.want)
		}
	}
	var none *Toolset
	if !none.Includes("any", "tool") {
		t.Error("a nil toolset (/mcp) must take every tool")
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true}, {"a*", "abc", true}, {"*c", "abc", true}, {"a*c", "abbbc", true},
		{"a*c", "abd", false}, {"", "", true}, {"", "a", false}, {"a**b", "ab", true}, {"*a*a*", "banana", true},
	} {
		if got := Match(c.pattern, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		ts     Toolset
		fields []string
	}{
		{Toolset{}, nil},
		{Toolset{Exposure: "search", Always: []string{"read_file"}}, nil},
		{Toolset{Exposure: "everything"}, []string{"exposure"}},
		{Toolset{Tools: []string{""}, Exclude: []string{""}}, []string{"tools", "exclude"}},
		{Toolset{Always: []string{"x"}}, []string{"always"}}, // with exposure "list"
		{Toolset{Exposure: "search", Always: []string{"fs__[a-"}}, []string{"always"}},
	} {
		var got []string
		for _, p := range c.ts.Check() {
			got = append(got, p.Field)
		}
		if !slices.Equal(got, c.fields) {
			t.Errorf("Check(%+v) fields %q, want %q", c.ts, got, c.fields)
		}
	}
	for name, ok := range map[string]bool{"ide": true, "team.a-1_x": true, "": false, "..": false, "a/b": false, strings.Repeat("a", 65): false} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v", name, err)
		}
	}
	if errs := CheckAll([]Toolset{{Name: "a"}, {Name: "a"}}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "duplicate") {
		t.Errorf("CheckAll of a name used twice: %v", errs)
	}
}

func TestServes(t *testing.T) {
	catalog := func(yield func(string, string) bool) {
		for _, p := range [][2]string{{"fs", "read_file"}, {"mem", "read_graph"}, {"clock", "now"}} {
			if !yield(p[0], p[1]) {
				return
			}
		}
	}
	for _, c := range []struct {
		ts   *Toolset
		all  bool
		want []string
	}{
		{nil, true, nil},
		{&Toolset{}, true, nil},
		{&Toolset{Servers: []string{"clock"}}, false, []string{"clock"}},
		{&Toolset{Tools: []string{"read_*"}}, false, []string{"fs", "mem"}},
	} {
		servers, all := c.ts.Serves(catalog)
		if all != c.all || !slices.Equal(slices.Sorted(maps.Keys(servers)), c.want) {
			t.Errorf("Serves(%+v) = %v, %v; want %q, %v", c.ts, servers, all, c.want, c.all)
		}
	}
}

func TestPick(t *testing.T) {
	ts := &Toolset{Servers: []string{"fs"}, Exposure: ExposureSearch, Always: []string{"fs__read_*"}}
	keep, always := ts.Pick([]abi.Tool{
		{Name: "fs__read_file", Server: "fs", Tool: "read_file"},
		{Name: "clock__now", Server: "clock", Tool: "now"},
		{Name: "fs__write_file", Server: "fs", Tool: "write_file"},
	})
	if !slices.Equal(keep, []int{0, 2}) || !slices.Equal(always, []string{"fs__read_file"}) {
		t.Errorf("Pick = %v, %q", keep, always)
	}
}

func TestEnter(t *testing.T) {
	list := []Toolset{{Name: "ide"}}
	ctx, err := Enter(context.Background(), list, "ide")
	if err != nil || FromContext(ctx) != &list[0] {
		t.Fatalf("Enter(ide) = %v, %v", FromContext(ctx), err)
	}
	if _, err := Enter(context.Background(), list, "gone"); err == nil || !strings.Contains(err.Error(), `toolset "gone" was removed`) {
		t.Errorf("Enter(gone) = %v", err)
	}
	if FromContext(context.Background()) != nil {
		t.Error("a context without a toolset has one")
	}
}
