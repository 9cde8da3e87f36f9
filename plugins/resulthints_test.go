package plugins

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

func TestResultUnchanged(t *testing.T) {
	t.Parallel()
	jsonText := &abi.Hints{ResultTextPrefixes: []string{"{", "["}}
	keywords := &abi.Hints{ResultKeywords: []string{"ghp_", "sk-"}}
	truncate := &abi.Hints{ResultMinBytes: 1000}
	text := func(s ...string) *abi.CallToolResult {
		r := &abi.CallToolResult{}
		for _, t := range s {
			r.Content = append(r.Content, abi.Content{Type: "text", Text: t})
		}
		return r
	}
	for _, tt := range []struct {
		name string
		h    *abi.Hints
		r    *abi.CallToolResult
		want bool
	}{
		{"plain text", jsonText, text("12:00 UTC"), true},
		{"JSON object", jsonText, text(`{"a":1}`), false},
		{"JSON after Unicode white space", jsonText, text("\u00a0\n [1]"), false},
		{"JSON in a second block", jsonText, text("a", "[1]"), false},
		{"no text at all", jsonText, &abi.CallToolResult{Content: []abi.Content{{Type: "image", Data: []byte{0, 0, 0}}}}, true},
		{"no result", jsonText, nil, false},
		{"no keyword", keywords, text("nothing to see"), true},
		{"keyword in text", keywords, text("a", "key sk-123"), false},
		{"keyword in structuredContent", keywords, &abi.CallToolResult{Content: []abi.Content{}, StructuredContent: json.RawMessage(`{"k":"ghp_x"}`)}, false},
		{"escape in structuredContent", keywords, &abi.CallToolResult{Content: []abi.Content{}, StructuredContent: json.RawMessage(`{"k":"\u0067hp_x"}`)}, false},
		{"keyword in a resource", keywords, &abi.CallToolResult{Content: []abi.Content{{Type: "resource", Resource: json.RawMessage(`{"uri":"x","text":"sk-1"}`)}}}, false},
		{"keyword in _meta", keywords, &abi.CallToolResult{Content: []abi.Content{}, Meta: json.RawMessage(`{"trace":"ghp_x"}`)}, false},
		{"keyword in a text block's _meta", keywords, &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: "ok", Meta: json.RawMessage(`{"ghp_x":1}`)}}}, false},
		{"keyword in a resource link", keywords, &abi.CallToolResult{Content: []abi.Content{{Type: "resource_link", URI: "https://x/?t=ghp_x", Name: "n"}}}, false},
		{"clean resource", keywords, &abi.CallToolResult{Content: []abi.Content{{Type: "resource", Resource: json.RawMessage(`{"uri":"x","text":"fine"}`)}}}, true},
		{"HTML-escaped text in a resource counts as escaped", keywords, &abi.CallToolResult{Content: []abi.Content{{Type: "resource", Resource: json.RawMessage(`{"uri":"x","text":"<b>"}`)}}}, false},
		{"small result", truncate, text("12:00 UTC"), true},
		{"result that may be long enough", truncate, text(strings.Repeat("x", 120)), false},
	} {
		if got := resultUnchanged(tt.h, tt.r); got != tt.want {
			t.Errorf("%s: resultUnchanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// resultSizeBound is never below the encoding's length, whatever the
// strings hold (escapes, invalid UTF-8, U+2028) and the bytes.
func FuzzResultSizeBound(f *testing.F) {
	f.Add("text", "\u2028<>&\"\\\x00\xff", []byte{0, 1, 2}, `{"a":[1, 2]}`, int64(-1))
	f.Add("resource_link", "", []byte(nil), ``, int64(1<<62))
	f.Fuzz(func(t *testing.T, typ, text string, data []byte, raw string, size int64) {
		c := abi.Content{Type: typ, Text: text, Data: data, MimeType: text, URI: text, Name: typ, Title: text, Description: text, Size: &size}
		r := &abi.CallToolResult{Content: []abi.Content{c, {Type: typ, Text: text}}, IsError: true}
		if json.Valid([]byte(raw)) {
			c.Resource, c.Annotations, c.Meta = json.RawMessage(raw), json.RawMessage(raw), json.RawMessage(raw)
			r.Content[0] = c
			r.StructuredContent, r.Meta = json.RawMessage(raw), json.RawMessage(raw)
		}
		enc, err := json.Marshal(r)
		if err != nil {
			return
		}
		if b := resultSizeBound(r); b < len(enc) {
			t.Fatalf("bound %d below the encoding's %d bytes: %s", b, len(enc), enc)
		}
	})
}
