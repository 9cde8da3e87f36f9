package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// ParseToolsList reports whether body is exactly one tools/list request
// with no cursor, and returns its id as sent and its params' _meta (nil
// when absent). It is strict where the go-sdk's reading could differ from
// a lax one: member names are matched as written (no escapes), and a
// repeated or unknown member, an id that is not a string or an integer,
// or anything after the object refuses the shortcut. It walks the bytes
// (jsonwalk.go), as ParseToolCall does.
func ParseToolsList(body []byte) (id, meta json.RawMessage, ok bool) {
	body = TrimSpace(body)
	if !ValidObject(body) {
		return nil, nil, false
	}
	top, ok := Members(body, `"jsonrpc"`, `"id"`, `"method"`, `"params"`)
	version, id, method, params := top[0], top[1], top[2], top[3]
	if !ok || string(version) != `"2.0"` || string(method) != `"tools/list"` || id == nil || !plainID(id) {
		return nil, nil, false
	}
	if params != nil {
		if meta, ok = listParams(params); !ok {
			return nil, nil, false
		}
	}
	return id, meta, true
}

// listParams accepts null, {} and {"_meta": OBJECT-or-null}, and returns
// the _meta object (nil when absent or null). params is valid JSON.
func listParams(params []byte) (meta json.RawMessage, ok bool) {
	if string(params) == "null" {
		return nil, true
	}
	if params[0] != '{' {
		return nil, false
	}
	in, ok := Members(params, `"_meta"`)
	switch m := in[0]; {
	case !ok:
		return nil, false
	case m == nil || string(m) == "null":
		return nil, true
	case m[0] != '{':
		return nil, false
	default:
		return m, true
	}
}

// DecodeMeta decodes a request's _meta as the go-sdk does (its decoder,
// member names matched exactly).
func DecodeMeta(raw json.RawMessage) (mcp.Meta, bool) {
	var m mcp.Meta
	dec := segjson.NewDecoder(bytes.NewReader(raw))
	dec.DontMatchCaseInsensitiveStructFields()
	if err := dec.Decode(&m); err != nil {
		return nil, false
	}
	return m, true
}

// plainID accepts a JSON string or an integer that fits an int64, the ids
// the go-sdk echoes byte for byte.
func plainID(raw json.RawMessage) bool {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// AcceptsBoth reports whether the Accept headers allow both
// application/json and text/event-stream, which the go-sdk requires of a
// POST (it answers 400 otherwise), read as the go-sdk reads them.
func AcceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// ToolCallRequest is a plain tools/call request as ParseToolCall read it.
type ToolCallRequest struct {
	ID   any             // string or float64, as the go-sdk decodes ids
	Name string          // the tool
	Args json.RawMessage // an object, or nil when absent
	Meta json.RawMessage // the params' _meta object, or nil when absent
}

// ParseToolCall reports whether body is exactly one tools/call request the
// shortcut takes, and reads it. It is strict where a lax reading could
// differ from the go-sdk's: member names are matched as written (exactly,
// no escapes), a repeated or unknown member refuses the shortcut, as do an
// id that is not an integer (to 2^53) or a plain ASCII string, a tool name
// that is not plain UTF-8 text, arguments that are neither an object nor
// null, and JSON nested deeper than the go-sdk reads. The request then goes
// to the go-sdk, which answers it as it always did. FuzzParseFastCall holds
// it to the go-sdk's decoder. It walks the bytes (jsonwalk.go).
func ParseToolCall(body []byte) (*ToolCallRequest, bool) {
	body = TrimSpace(body)
	if !ValidObject(body) {
		return nil, false
	}
	top, ok := Members(body, `"jsonrpc"`, `"id"`, `"method"`, `"params"`)
	version, id, method, params := top[0], top[1], top[2], top[3]
	if !ok || string(version) != `"2.0"` || string(method) != `"tools/call"` || len(params) == 0 || params[0] != '{' {
		return nil, false
	}
	p := new(ToolCallRequest)
	switch {
	case len(id) == 0:
		return nil, false
	case id[0] == '"':
		if !PlainASCII(id[1 : len(id)-1]) {
			return nil, false
		}
		p.ID = string(id[1 : len(id)-1])
	default:
		// As the go-sdk reads a number id: a float64, exact up to 2^53.
		n, err := strconv.ParseInt(string(id), 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return nil, false
		}
		p.ID = float64(n)
	}
	in, ok := Members(params, `"name"`, `"arguments"`, `"_meta"`)
	name, args, meta := in[0], in[1], in[2]
	if !ok {
		return nil, false
	}
	if len(name) < 3 || name[0] != '"' || bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) {
		return nil, false
	}
	p.Name, p.Args, p.Meta = string(name[1:len(name)-1]), args, meta
	// Arguments: an object, or null as the go-sdk's client sends no
	// arguments (passed on as it is on the go-sdk's path).
	if a := p.Args; a != nil && a[0] != '{' && string(a) != "null" {
		return nil, false
	}
	if m := p.Meta; m != nil && m[0] != '{' {
		return nil, false
	}
	return p, true
}

// CallMeta reads a tools/call's _meta as the go-sdk's path does (its
// decoder into mcp.Meta). A progress token asks for a stream, and the
// protocol version key for 2026-07-28: both are the go-sdk's to serve.
func CallMeta(raw json.RawMessage) (mcp.Meta, bool) {
	m, ok := DecodeMeta(raw)
	if !ok {
		return nil, false
	}
	if _, ok := m["progressToken"]; ok {
		return nil, false
	}
	if _, ok := m[mcp.MetaKeyProtocolVersion]; ok {
		return nil, false
	}
	return m, true
}
