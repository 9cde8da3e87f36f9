package plugins

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/mcphost-project/mcphost/abi"
)

// resultUnchanged reports whether the plugin's hints promise that its
// tool_result hook leaves r as it is, so the host need not call it. Each
// check errs towards calling: a false answer costs a guest call, a wrong
// true one would skip a policy.
func resultUnchanged(h *abi.Hints, r *abi.CallToolResult) bool {
	if r == nil {
		return false
	}
	if len(h.ResultTextPrefixes) > 0 && !anyTextStartsWith(r, h.ResultTextPrefixes) {
		return true
	}
	if len(h.ResultKeywords) > 0 && !mayContainAny(r, h.ResultKeywords) {
		return true
	}
	// Below the plugin's promise even at its longest: no need to encode
	// the input to know (truncate on a small result).
	if h.ResultMinBytes > 0 && resultSizeBound(r) < h.ResultMinBytes {
		return true
	}
	return false
}

// resultSizeBound is at least the length of r's JSON encoding
// (encoding/json, as the chain encodes a hook's input): every string at
// six bytes a byte (\u00XX, or \ufffd for a byte of invalid UTF-8),
// bytes as base64, raw JSON as it is (encoding compacts it), and room for
// every member name, quote and separator.
func resultSizeBound(r *abi.CallToolResult) int {
	const (
		resultMembers  = 80  // {"content":[],"structuredContent":,"isError":true,"_meta":}
		contentMembers = 160 // every member of a block, named and punctuated, and a comma
		sizeDigits     = 20  // an int64
	)
	str := func(s string) int { return 6*len(s) + 2 }
	n := resultMembers + len(r.StructuredContent) + len(r.Meta)
	for i := range r.Content {
		c := &r.Content[i]
		n += contentMembers + str(c.Type) + str(c.Text) + 4*(len(c.Data)+2)/3 + 2 + str(c.MimeType) +
			len(c.Resource) + str(c.URI) + str(c.Name) + str(c.Title) + str(c.Description) + sizeDigits +
			len(c.Annotations) + len(c.Meta)
	}
	return n
}

// anyTextStartsWith reports whether a text block of r starts, after
// leading white space, with one of prefixes.
func anyTextStartsWith(r *abi.CallToolResult, prefixes []string) bool {
	for i := range r.Content {
		if r.Content[i].Type != "text" {
			continue
		}
		text := strings.TrimLeftFunc(r.Content[i].Text, unicode.IsSpace)
		for _, p := range prefixes {
			if strings.HasPrefix(text, p) {
				return true
			}
		}
	}
	return false
}

// mayContainAny reports whether one of words may occur in r's text
// blocks, or in a string or key of its other blocks, a block's _meta or
// annotations, structuredContent or the result's _meta.
// JSON is searched as encoded; one with an escape sequence might hide a
// word, so it counts as containing every word.
func mayContainAny(r *abi.CallToolResult, words []string) bool {
	for i := range r.Content {
		c := &r.Content[i]
		if c.Type == "text" && len(c.Meta) == 0 && len(c.Annotations) == 0 {
			if containsAnyWord(c.Text, words) {
				return true
			}
			continue
		}
		raw, err := json.Marshal(c)
		if err != nil || rawMayContain(raw, words) {
			return true
		}
	}
	return len(r.StructuredContent) > 0 && rawMayContain(r.StructuredContent, words) ||
		len(r.Meta) > 0 && rawMayContain(r.Meta, words)
}

func containsAnyWord(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func rawMayContain(raw []byte, words []string) bool {
	if bytes.IndexByte(raw, '\\') >= 0 {
		return true
	}
	for _, w := range words {
		if bytes.Contains(raw, []byte(w)) {
			return true
		}
	}
	return false
}
