// Package main is fetch, an mcphost tool plugin in Go: it fetches a URL
// from a host the operator granted (allowed_hosts) and returns the status
// and the body, or, with a JSON Pointer, just the value the pointer names in
// a JSON response, so a model reads one field instead of a whole document.
package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcphost-project/mcphost/abi/pdk/tool"
)

// DefaultMaxBytes is how much of a body a call returns unless it asks for
// more or less.
const DefaultMaxBytes = 20000

// In is fetch's input.
type In struct {
	URL      string `json:"url" jsonschema:"the http or https URL to GET; its host must be in the plugin's allowed_hosts"`
	Pointer  string `json:"pointer,omitempty" jsonschema:"a JSON Pointer (RFC 6901) such as /items/0/name: return only the value it names in the JSON response"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"return at most this many bytes of the body (default 20000)"`
}

// Out is fetch's result.
type Out struct {
	Status    int    `json:"status" jsonschema:"the HTTP status code"`
	Body      string `json:"body,omitempty" jsonschema:"the body (UTF-8), cut to max_bytes"`
	Value     any    `json:"value,omitempty" jsonschema:"the value the pointer names"`
	Truncated bool   `json:"truncated,omitempty" jsonschema:"the body was cut"`
}

// get is how a call fetches: the host's http_request in the plugin, a
// stub in native tests. Its error, such as the host's "refused by
// allowed_hosts: ...", is the call's.
var get = func(u string) (int, []byte, error) { return 0, nil, nil }

// Fetch is the tool.
func Fetch(_ *tool.Context, in In) (Out, error) {
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Out{}, tool.Errorf("url", "must be an absolute http or https URL, not %q", in.URL)
	}
	if in.MaxBytes < 0 {
		return Out{}, tool.Errorf("max_bytes", "must not be negative")
	}
	if in.Pointer != "" && !strings.HasPrefix(in.Pointer, "/") {
		return Out{}, tool.Errorf("pointer", "a JSON Pointer starts with /, like /items/0")
	}
	status, body, err := get(u.String())
	if err != nil {
		return Out{}, err
	}
	out := Out{Status: status}
	if in.Pointer != "" {
		var doc any
		if err := json.Unmarshal(body, &doc); err != nil {
			return Out{}, tool.Errorf("pointer", "the response is not JSON (status %d): %v", status, err)
		}
		v, err := lookup(doc, in.Pointer)
		if err != nil {
			return Out{}, tool.Errorf("pointer", "%v", err)
		}
		out.Value = v
		return out, nil
	}
	limit := in.MaxBytes
	if limit == 0 {
		limit = DefaultMaxBytes
	}
	if len(body) > limit {
		body = body[:limit]
		for len(body) > 0 && !utf8.Valid(body) { // do not cut a character in two
			body = body[:len(body)-1]
		}
		out.Truncated = true
	}
	out.Body = strings.ToValidUTF8(string(body), "\uFFFD")
	return out, nil
}

// lookup follows a JSON Pointer (RFC 6901) into doc.
func lookup(doc any, pointer string) (any, error) {
	cur := doc
	for _, raw := range strings.Split(pointer[1:], "/") {
		tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q at %s", tok, pointer)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("no element %q (the array has %d) at %s", tok, len(v), pointer)
			}
			cur = v[i]
		default:
			return nil, fmt.Errorf("%q goes into a %T at %s", tok, cur, pointer)
		}
	}
	return cur, nil
}

// Plugin is the plugin, registered by register_wasip1.go.
var Plugin = tool.Plugin{Name: "fetch", Version: "1.0.0", Tools: []tool.Tool{
	tool.New("fetch", "GET a URL from an allowed host; return its status and body, or with pointer one value of a JSON response.",
		Fetch, tool.Title("Fetch a URL"), tool.ReadOnly(), tool.OpenWorld()),
}}

func main() {}
