// Package paramheader holds the rules of protocol 2026-07-28's custom
// headers from tool parameters (SEP-2243; the streamable HTTP transport's
// "Custom Headers from Tool Parameters"): a tool marks a property of its
// inputSchema with "x-mcp-header": "Region", and a tools/call over HTTP
// then carries the argument's value as the header Mcp-Param-Region too,
// so intermediaries can route on it without reading the body.
//
// mcphost is on both sides of that rule. To its clients it is the server
// that reads the body: Check refuses a call whose headers disagree with
// its arguments (HeaderMismatch, -32020, with HTTP 400). To an HTTP
// upstream it is the client: Headers gives the headers of the call it
// sends, computed from the arguments it really sends (a policy may have
// rewritten them), and the upstream's HTTP transport adds them (Outgoing).
package paramheader

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prefix starts every custom parameter header.
const Prefix = "Mcp-Param-"

// annotation is the schema keyword that names a header.
const annotation = "x-mcp-header"

// FirstVersion is the first protocol version whose clients must send the
// headers, and whose servers must require them.
const FirstVersion = "2026-07-28"

// Binding is one annotated property: the chain of property names that
// leads to it from the schema's root, its header's name part (the header
// is Prefix+Name) and its JSON Schema type.
type Binding struct {
	Path []string
	Name string
	Type string // "string", "integer" or "boolean"
}

// Header is the binding's full header name.
func (b Binding) Header() string { return Prefix + b.Name }

// dataKeywords hold instances, not schemas: an "x-mcp-header" key inside
// one is data.
var dataKeywords = map[string]bool{"default": true, "const": true, "enum": true, "examples": true}

// Bindings reads the x-mcp-header annotations of a tool's inputSchema, nil
// when it has none. An annotation the revision forbids (on a property not
// reached from the root through "properties" alone, on a type other than
// string, integer and boolean, a name that is not an HTTP token, a name
// used twice) makes the whole definition invalid: the error says which
// and why, and clients must not be offered the tool.
func Bindings(schema json.RawMessage) ([]Binding, error) {
	if !bytes.Contains(schema, []byte(annotation)) {
		return nil, nil // the common case, without decoding
	}
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("paramheader: inputSchema: %w", err)
	}
	w := walker{seen: map[string]string{}}
	if err := w.walk(root, true, nil); err != nil {
		return nil, err
	}
	return w.out, nil
}

type walker struct {
	out  []Binding
	seen map[string]string // lower-cased name -> property path
}

// walk visits one schema; reachable says whether it is reached from the
// root through "properties" alone, path the property names on the way.
func (w *walker) walk(v any, reachable bool, path []string) error {
	switch s := v.(type) {
	case []any:
		for _, e := range s {
			if err := w.walk(e, false, nil); err != nil {
				return err
			}
		}
	case map[string]any:
		if raw, ok := s[annotation]; ok {
			if err := w.bind(s, raw, reachable, path); err != nil {
				return err
			}
		}
		for k, sub := range s {
			switch {
			case dataKeywords[k]:
			case k == "properties" && reachable:
				props, ok := sub.(map[string]any)
				if !ok {
					continue
				}
				for name, p := range props {
					if err := w.walk(p, true, append(path[:len(path):len(path)], name)); err != nil {
						return err
					}
				}
			default:
				if err := w.walk(sub, false, nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (w *walker) bind(s map[string]any, raw any, reachable bool, path []string) error {
	where := "the schema's root"
	if len(path) > 0 {
		where = fmt.Sprintf("property %q", strings.Join(path, "."))
	}
	if !reachable || len(path) == 0 {
		return fmt.Errorf("paramheader: an %s annotation outside a chain of \"properties\" from the root (under items, a composition or conditional keyword, or $ref) is not allowed", annotation)
	}
	name, ok := raw.(string)
	if !ok || name == "" {
		return fmt.Errorf("paramheader: %s: %s must be a non-empty string", where, annotation)
	}
	for i := 0; i < len(name); i++ {
		if !tchar(name[i]) {
			return fmt.Errorf("paramheader: %s: %s %q: %q is not allowed in an HTTP header name", where, annotation, name, name[i])
		}
	}
	typ, _ := s["type"].(string)
	if typ != "string" && typ != "integer" && typ != "boolean" {
		return fmt.Errorf("paramheader: %s: %s is allowed only on a property of type string, integer or boolean, not %v", where, annotation, s["type"])
	}
	lower := strings.ToLower(name)
	if prev, dup := w.seen[lower]; dup {
		return fmt.Errorf("paramheader: %s: %s %q is also the header of property %q (names are compared ignoring case)", where, annotation, name, prev)
	}
	w.seen[lower] = strings.Join(path, ".")
	w.out = append(w.out, Binding{Path: path, Name: name, Type: typ})
	return nil
}

// tchar reports whether c may be in an HTTP token (RFC 9110 section 5.6.2).
func tchar(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// Required reports whether a request with these headers is of a protocol
// whose clients must send the custom headers.
func Required(h http.Header) bool {
	v := h.Get("Mcp-Protocol-Version")
	return v != "" && v >= FirstVersion
}

// mismatch is the error a disagreement is answered with.
func mismatch(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "Header mismatch: " + fmt.Sprintf(format, args...)}
}

// Check compares the custom headers of a tools/call request with its
// arguments, for the bindings of the tool as the client was shown it. A
// header whose value disagrees with the argument (after decoding a Base64
// sentinel), holds characters a header may not, comes more than once, or
// is sent for an argument that is absent or null is refused; a missing
// header is refused only when required (Required: the client's protocol
// asks for it). The error is a HeaderMismatch JSON-RPC error.
func Check(h http.Header, bs []Binding, args json.RawMessage, required bool) error {
	if len(bs) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if len(args) > 0 && json.Unmarshal(args, &obj) != nil {
		obj = nil // not an object: the upstream refuses it; no value is present
	}
	for _, b := range bs {
		vals := h.Values(b.Header())
		raw, present := lookup(obj, b.Path)
		if !present || string(raw) == "null" {
			if len(vals) > 0 {
				return mismatch("%s is sent, but argument %q is absent or null", b.Header(), strings.Join(b.Path, "."))
			}
			continue
		}
		body, ok := Encode(raw)
		if !ok {
			continue // not a value of a header's kind: the tool's own validation refuses it
		}
		switch {
		case len(vals) == 0:
			if required {
				return mismatch("%s is missing for argument %q", b.Header(), strings.Join(b.Path, "."))
			}
			continue
		case len(vals) > 1:
			return mismatch("%s is sent %d times", b.Header(), len(vals))
		}
		got, err := Decode(vals[0])
		if err != nil {
			return mismatch("%s: %v", b.Header(), err)
		}
		want, _ := Decode(body)
		if !equal(got, want, raw) {
			return mismatch("%s header value %q does not match argument %q", b.Header(), vals[0], strings.Join(b.Path, "."))
		}
	}
	return nil
}

// equal compares a decoded header value with the argument's: integers
// numerically (42.0 and 42 agree), anything else as text.
func equal(header, body string, raw json.RawMessage) bool {
	if header == body {
		return true
	}
	if len(raw) == 0 || raw[0] == '"' || raw[0] == 't' || raw[0] == 'f' {
		return false
	}
	h, err1 := strconv.ParseFloat(header, 64)
	b, err2 := strconv.ParseFloat(body, 64)
	return err1 == nil && err2 == nil && h == b
}

// lookup returns the argument at path, and whether it is there.
func lookup(obj map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	for i, p := range path {
		raw, ok := obj[p]
		if !ok {
			return nil, false
		}
		if i == len(path)-1 {
			return raw, true
		}
		obj = nil
		if json.Unmarshal(raw, &obj) != nil {
			return nil, false
		}
	}
	return nil, false
}

// Headers returns the custom headers of a tools/call with args for a tool
// with bindings bs, nil when there are none: one per argument present and
// not null, encoded (Encode).
func Headers(bs []Binding, args json.RawMessage) http.Header {
	if len(bs) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return nil
	}
	var h http.Header
	for _, b := range bs {
		raw, ok := lookup(obj, b.Path)
		if !ok {
			continue
		}
		v, ok := Encode(raw)
		if !ok {
			continue
		}
		if h == nil {
			h = http.Header{}
		}
		h[http.CanonicalHeaderKey(b.Header())] = []string{v}
	}
	return h
}

// maxSafe bounds the integers a header may carry (JavaScript's safe range).
const maxSafe = 1<<53 - 1

// Encode returns the header value of an argument: a string as it is (or
// Base64 in the sentinel when it is not plain visible ASCII, has spaces at
// either end, or looks like the sentinel itself), an integer in decimal,
// a boolean as true or false. ok is false for null and any other value.
func Encode(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		if needsBase64(v) {
			return sentinel + base64.StdEncoding.EncodeToString([]byte(v)) + sentinelEnd, true
		}
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > maxSafe {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	}
	return "", false
}

const (
	sentinel    = "=?base64?"
	sentinelEnd = "?="
)

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, sentinel) && strings.HasSuffix(s, sentinelEnd)
}

// Decode reads a header value: the text in a Base64 sentinel, or the value
// itself. A value with characters a header field may not hold, or a
// sentinel whose Base64 is not valid, is an error.
func Decode(v string) (string, error) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return "", fmt.Errorf("the value holds the byte %#x, which a header may not", c)
		}
	}
	if len(v) >= len(sentinel)+len(sentinelEnd) && strings.HasPrefix(v, sentinel) && strings.HasSuffix(v, sentinelEnd) {
		b, err := base64.StdEncoding.DecodeString(v[len(sentinel) : len(v)-len(sentinelEnd)])
		if err != nil {
			return "", fmt.Errorf("the value's Base64 is not valid: %w", err)
		}
		return string(b), nil
	}
	return v, nil
}

type incomingKey struct{}

// WithIncoming returns ctx carrying the headers of the HTTP request a
// tools/call came in, for the call path to Check.
func WithIncoming(ctx context.Context, h http.Header) context.Context {
	if h == nil {
		return ctx
	}
	return context.WithValue(ctx, incomingKey{}, h)
}

// Incoming returns what WithIncoming put in ctx: nil for a call that came
// in some other way (stdio, the Go API).
func Incoming(ctx context.Context) http.Header {
	h, _ := ctx.Value(incomingKey{}).(http.Header)
	return h
}

type outgoingKey struct{}

// WithOutgoing returns ctx carrying the custom headers (Headers) of the
// tools/call sent with it, which an upstream's HTTP transport adds to its
// request (Add).
func WithOutgoing(ctx context.Context, h http.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, outgoingKey{}, h)
}

// Add returns r with the custom headers of its context (WithOutgoing), a
// copy when there are any; r itself otherwise. Only a tools/call request
// carries them: the go-sdk sends each request with the context of its call.
func Add(r *http.Request) *http.Request {
	h, _ := r.Context().Value(outgoingKey{}).(http.Header)
	if len(h) == 0 {
		return r
	}
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header[k] = v
	}
	return r
}
