package policies

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// MaxTitle is the longest title LLM platforms accept, in characters.
const MaxTitle = 200

// titles is builtin:titles: every tool gets a title. Configuration:
//
//	overrides = { "clock__current_time" = "What time is it" } # by exposed name
type titles struct {
	overrides map[string]string
}

func newTitles() pdk.Policy {
	t := &titles{}
	return pdk.Policy{
		Name:      "titles",
		Version:   Version,
		Configure: t.configure,
		ToolsList: t.toolsList,
		Hints:     func() abi.Hints { return abi.Hints{ListPerTool: true, IgnoresCaller: true} },
	}
}

func (t *titles) configure(cfg pdk.ConfigSource) (err error) {
	t.overrides, err = stringMap(cfg, "overrides")
	return err
}

func (t *titles) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	for i := range in.Tools {
		tool := &in.Tools[i]
		tool.Title = t.title(tool)
		// Clients that read annotations.title (an older place for it)
		// must not show the title this policy replaced. A tool without
		// one does not get one: title is where clients look first.
		if a := tool.Annotations; a != nil && a.Title != "" && a.Title != tool.Title {
			cp := *a // the annotations may be shared with the catalog
			cp.Title = tool.Title
			tool.Annotations = &cp
		}
	}
	return &abi.ToolsListOutput{Tools: in.Tools}, nil
}

// title picks the override, the tool's title, its annotations' title, or
// one made from its upstream name, capped at MaxTitle characters.
func (t *titles) title(tool *abi.Tool) string {
	title, ok := t.overrides[tool.Name]
	if !ok || strings.TrimSpace(title) == "" {
		title = strings.TrimSpace(tool.Title)
	}
	if title == "" && tool.Annotations != nil {
		title = strings.TrimSpace(tool.Annotations.Title)
	}
	if title == "" {
		title = Humanize(tool.Tool)
	}
	if title == "" {
		title = Humanize(tool.Name)
	}
	title, _ = truncateRunes(title, MaxTitle, "…")
	return title
}

// Humanize makes a title from a tool name: separators (_ - . / : and
// spaces) become single spaces, camelCase is split, and every word starts
// with a capital: "get_file_contents" and "getFileContents" both give
// "Get File Contents". Letters after the first keep their case, so "list_PRs"
// gives "List PRs".
func Humanize(name string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/' || r == ':' || unicode.IsSpace(r):
			flush()
			prev = 0
			continue
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
		}
		cur = append(cur, r)
		prev = r
	}
	flush()
	for i, w := range words {
		r, size := utf8.DecodeRuneInString(w)
		words[i] = string(unicode.ToUpper(r)) + w[size:]
	}
	return strings.Join(words, " ")
}
