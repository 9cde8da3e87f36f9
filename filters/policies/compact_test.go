package policies

import (
	"strings"
	"testing"
)

func TestCompactText(t *testing.T) {
	c := &compact{}
	for _, tc := range []struct {
		in     string
		budget int
		want   string
	}{
		{"Short.", 10, "Short."},
		{"One sentence here. Another one that is far too long to keep.", 30, "One sentence here."},
		{"One sentence here. Another one that is far too long to keep.", 40, "One sentence here. Another one that is…"},
		{"no sentence ends anywhere in this long text", 20, "no sentence ends…"},
		{"Reads a file.\n\nExample: read_file(path)\n\nPaths are relative.", 100, "Reads a file.\n\nPaths are relative."},
		{"Ünïcödé wörds everywhere in this text", 12, "Ünïcödé…"},
	} {
		got := c.text(tc.in, tc.budget)
		if got != tc.want {
			t.Errorf("text(%q, %d) = %q, want %q", tc.in, tc.budget, got, tc.want)
		}
		if runeCount(got) > tc.budget {
			t.Errorf("text(%q, %d) = %q: over the budget", tc.in, tc.budget, got)
		}
	}
	c.keepExamples = true
	if got := c.text("A.\n\nExample: b", 100); !strings.Contains(got, "Example") {
		t.Errorf("examples kept: %q", got)
	}
}

func TestSameName(t *testing.T) {
	for _, tc := range []struct {
		title, name string
		want        bool
	}{
		{"Max Results", "max_results", true}, {"maxResults", "max_results", true}, {"search_nodes", "search_nodes", true},
		{"Query", "query", true}, {"What time is it", "now", false}, {"", "x", false}, {"--", "__", false},
	} {
		if got := sameName(tc.title, tc.name); got != tc.want {
			t.Errorf("sameName(%q, %q) = %v", tc.title, tc.name, got)
		}
	}
}
