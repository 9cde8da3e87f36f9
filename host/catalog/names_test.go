package catalog

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"read_file", "read_file"},
		{"read-file", "read-file"},
		{"read.file", "read_file"},
		{"read file now", "read_file_now"},
		{"a..b", "a_b"},
		{"héllo", "h_llo"},
		{"", ""},
		{"日本", "_"},
	} {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNameBuild(t *testing.T) {
	t.Parallel()
	always := NewNameBuilder(ToolsConfig{Separator: "__", MaxNameLength: 64, Prefix: PrefixAlways})
	never := NewNameBuilder(ToolsConfig{Separator: "__", MaxNameLength: 64, Prefix: PrefixNever})
	long := strings.Repeat("x", 80)
	for _, tc := range []struct {
		name         string
		nb           NameBuilder
		server, tool string
		want         string
	}{
		{"plain", always, "files", "read_file", "files__read_file"},
		{"sanitised", always, "my files", "read.file", "my_files__read_file"},
		{"leading digit", always, "1password", "get", "_1password__get"},
		{"never prefix", never, "files", "read_file", "read_file"},
		{"never leading dash", never, "files", "-x", "_-x"},
		{"long tool", always, "gh", long, "gh__" + strings.Repeat("x", 50) + "_" + nameHash("gh", long)},
		{"long never", never, "s", long, strings.Repeat("x", 54) + "_" + nameHash("s", long)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.nb.Build(tc.server, tc.tool)
			if got != tc.want {
				t.Errorf("build(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
			}
			if !ValidName(got, 64) {
				t.Errorf("build(%q, %q) = %q is not a valid name", tc.server, tc.tool, got)
			}
		})
	}
}

func TestNameProportionalCut(t *testing.T) {
	t.Parallel()
	nb := NewNameBuilder(ToolsConfig{Separator: "__", MaxNameLength: 40, Prefix: PrefixAlways})
	server, tool := strings.Repeat("s", 30), strings.Repeat("t", 60)
	got := nb.Build(server, tool)
	if len(got) > 40 {
		t.Fatalf("len(%q) = %d > 40", got, len(got))
	}
	s, rest, _ := strings.Cut(got, "__")
	tPart := strings.TrimSuffix(rest, "_"+nameHash(server, tool))
	// The tool part is twice the server part's length; each gives up
	// characters in proportion, so the tool part stays clearly the longer.
	if ratio := float64(len(tPart)) / float64(len(s)); ratio < 1.5 || ratio > 2.5 {
		t.Errorf("cut not proportional: server part %d, tool part %d (%q)", len(s), len(tPart), got)
	}
	if again := nb.Build(server, tool); again != got {
		t.Errorf("names are not stable: %q then %q", got, again)
	}
}

func TestCatalogCollisions(t *testing.T) {
	t.Parallel()
	cfg := ToolsConfig{Separator: "__", MaxNameLength: 64, Prefix: PrefixAlways}
	cat := Build(1, cfg, []ServerTools{
		{Server: "a", Tools: mcpTools("read.file", "read_file", "zeta", "alpha")},
		{Server: "b", Tools: mcpTools("read_file")},
	})
	var names []string
	for _, tl := range cat.Tools {
		names = append(names, tl.Name)
	}
	want := []string{"a__alpha", "a__read.file_" + nameHash("a", "read.file"), "a__read_file", "a__zeta", "b__read_file"}
	// "read.file" sorts before "read_file", so it takes the plain name and
	// "read_file" gets the hash.
	want[1], want[2] = "a__read_file", "a__read_file_"+nameHash("a", "read_file")
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("names = %v, want %v", names, want)
	}
	if len(cat.Issues) != 1 {
		t.Errorf("issues = %v, want one collision", cat.Issues)
	}
	for name, r := range cat.Routes {
		if cat.ByTool[r] != name {
			t.Errorf("route table inconsistent for %q", name)
		}
	}
}

func TestCatalogNeverPrefixClash(t *testing.T) {
	t.Parallel()
	cfg := ToolsConfig{Separator: "__", MaxNameLength: 64, Prefix: PrefixNever}
	cat := Build(1, cfg, []ServerTools{
		{Server: "a", Tools: mcpTools("search")},
		{Server: "b", Tools: mcpTools("search", "other")},
	})
	if r := cat.Routes["search"]; r.Server != "a" {
		t.Errorf("search routes to %q, want the first server a", r.Server)
	}
	if len(cat.Issues) != 1 || !strings.Contains(cat.Issues[0].Err.Error(), `server "a"`) || cat.Issues[0].Server != "b" {
		t.Errorf("issues = %v, want a clash naming both servers", cat.Issues)
	}
	if _, ok := cat.Routes["other"]; !ok {
		t.Errorf("other tools of the clashing server must still be served")
	}
}

func FuzzNameBuild(f *testing.F) {
	f.Add("files", "read_file", "__", 64, true)
	f.Add("日本", "ツール", "-", 20, false)
	f.Add("", "", "", 0, true)
	f.Fuzz(func(t *testing.T, server, tool, sep string, max int, prefix bool) {
		if max > 1000 {
			max = 1000
		}
		p := PrefixNever
		if prefix {
			p = PrefixAlways
		}
		nb := NewNameBuilder(ToolsConfig{Separator: sep, MaxNameLength: max, Prefix: p})
		name := nb.Build(server, tool)
		if !ValidName(name, nb.Max) {
			t.Fatalf("build(%q, %q, sep=%q, max=%d) = %q: not valid within %d", server, tool, sep, max, name, nb.Max)
		}
		if again := nb.Build(server, tool); again != name {
			t.Fatalf("unstable: %q then %q", name, again)
		}
		if h := nb.Hashed(server, tool); !ValidName(h, nb.Max) {
			t.Fatalf("hashed(%q, %q) = %q: not valid within %d", server, tool, h, nb.Max)
		}
	})
}

// mcpTools are tools of these names, with the least schema.
func mcpTools(names ...string) []*mcp.Tool {
	out := make([]*mcp.Tool, 0, len(names))
	for _, n := range names {
		out = append(out, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
	}
	return out
}
