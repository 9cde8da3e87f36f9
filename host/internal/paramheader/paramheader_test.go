package paramheader

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const regionSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"n":{"type":"integer","x-mcp-header":"N"},
	"on":{"type":"boolean","x-mcp-header":"On"},
	"where":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},
	"query":{"type":"string","default":{"x-mcp-header":"not a schema"}}}}`

func TestBindings(t *testing.T) {
	bs, err := Bindings(json.RawMessage(regionSchema))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, b := range bs {
		got[b.Header()] = strings.Join(b.Path, ".") + ":" + b.Type
	}
	want := map[string]string{"Mcp-Param-Region": "region:string", "Mcp-Param-N": "n:integer", "Mcp-Param-On": "on:boolean", "Mcp-Param-Zone": "where.zone:string"}
	if len(got) != len(want) {
		t.Fatalf("Bindings = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if bs, err := Bindings(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)); bs != nil || err != nil {
		t.Errorf("no annotation: %v, %v", bs, err)
	}
	for name, schema := range map[string]string{
		"number":        `{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
		"no type":       `{"properties":{"a":{"x-mcp-header":"A"}}}`,
		"items":         `{"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`,
		"anyOf":         `{"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`,
		"under $defs":   `{"$defs":{"x":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}}`,
		"root":          `{"type":"string","x-mcp-header":"A"}`,
		"space":         `{"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}`,
		"newline":       `{"properties":{"a":{"type":"string","x-mcp-header":"A\r\nX: y"}}}`,
		"empty":         `{"properties":{"a":{"type":"string","x-mcp-header":""}}}`,
		"not a string":  `{"properties":{"a":{"type":"string","x-mcp-header":3}}}`,
		"twice in case": `{"properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"region"}}}`,
		"bad JSON":      `{"x-mcp-header":`,
	} {
		if _, err := Bindings(json.RawMessage(schema)); err == nil {
			t.Errorf("%s: no error for %s", name, schema)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	for _, tc := range []struct{ arg, header string }{
		{`"us-west1"`, "us-west1"},
		{`"Hello, 世界"`, "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{`" padded "`, "=?base64?IHBhZGRlZCA=?="},
		{`"line1\nline2"`, "=?base64?bGluZTEKbGluZTI=?="},
		{`"=?base64?literal?="`, "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		{`42`, "42"},
		{`-7`, "-7"},
		{`true`, "true"},
	} {
		got, ok := Encode(json.RawMessage(tc.arg))
		if !ok || got != tc.header {
			t.Errorf("Encode(%s) = %q, %v; want %q (the revision's table)", tc.arg, got, ok, tc.header)
		}
		var want string
		if json.Unmarshal([]byte(tc.arg), &want) == nil {
			if dec, err := Decode(got); err != nil || dec != want {
				t.Errorf("Decode(%q) = %q, %v; want %q", got, dec, err, want)
			}
		}
	}
	for _, arg := range []string{`null`, `1.5`, `9007199254740993`, `{}`, `[]`} {
		if v, ok := Encode(json.RawMessage(arg)); ok {
			t.Errorf("Encode(%s) = %q, want no header", arg, v)
		}
	}
	if _, err := Decode("=?base64?!!!?="); err == nil {
		t.Error("Decode of bad Base64: no error")
	}
	if _, err := Decode("caf\xc3\xa9"); err == nil {
		t.Error("Decode of a non-ASCII value: no error")
	}
}

func TestCheck(t *testing.T) {
	bs, err := Bindings(json.RawMessage(regionSchema))
	if err != nil {
		t.Fatal(err)
	}
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		header   http.Header
		args     string
		required bool
		ok       bool
	}{
		{"all match", h("Mcp-Param-Region", "us-west1", "Mcp-Param-N", "42.0", "Mcp-Param-On", "false", "mcp-param-zone", "=?base64?ei0x?="), `{"region":"us-west1","n":42,"on":false,"where":{"zone":"z-1"}}`, true, true},
		{"absent argument, no header", h(), `{"query":"x"}`, true, true},
		{"null argument, no header", h(), `{"region":null}`, true, true},
		{"missing header, required", h(), `{"region":"us-west1"}`, true, false},
		{"missing header, older protocol", h(), `{"region":"us-west1"}`, false, true},
		{"different value", h("Mcp-Param-Region", "eu-west1"), `{"region":"us-west1"}`, false, false},
		{"different integer", h("Mcp-Param-N", "41"), `{"n":42}`, true, false},
		{"header for an absent argument", h("Mcp-Param-Region", "us-west1"), `{}`, false, false},
		{"sent twice", h("Mcp-Param-Region", "us-west1", "Mcp-Param-Region", "us-west1"), `{"region":"us-west1"}`, true, false},
		{"bad Base64", h("Mcp-Param-Region", "=?base64?***?="), `{"region":"us-west1"}`, true, false},
		{"case of a boolean", h("Mcp-Param-On", "True"), `{"on":true}`, true, false},
		{"a non-primitive argument is the tool's to refuse", h(), `{"region":{"a":1}}`, true, true},
		{"unrelated headers pass", h("Mcp-Param-Other", "x"), `{}`, true, true},
	} {
		err := Check(tc.header, bs, json.RawMessage(tc.args), tc.required)
		if (err == nil) != tc.ok {
			t.Errorf("%s: Check = %v, want ok %v", tc.name, err, tc.ok)
		}
		var werr *jsonrpc.Error
		if err != nil && (!errors.As(err, &werr) || werr.Code != mcp.CodeHeaderMismatch) {
			t.Errorf("%s: %v is not a HeaderMismatch error", tc.name, err)
		}
	}
}

func TestHeadersRoundTrip(t *testing.T) {
	bs, _ := Bindings(json.RawMessage(regionSchema))
	args := json.RawMessage(`{"region":"Zürich","n":7,"on":true,"where":{"zone":" a "},"query":"q"}`)
	hdr := Headers(bs, args)
	if len(hdr) != 4 || hdr.Get("Mcp-Param-N") != "7" || hdr.Get("Mcp-Param-On") != "true" {
		t.Fatalf("Headers = %v", hdr)
	}
	if err := Check(hdr, bs, args, true); err != nil {
		t.Errorf("Check of what Headers made: %v", err)
	}
	if Required(http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}) || !Required(http.Header{"Mcp-Protocol-Version": {"2026-07-28"}}) {
		t.Error("Required: wrong versions")
	}
}

// Reading a schema without annotations, as views do for every tool, costs
// no allocation.
func TestBindingsWithoutAnnotationsAllocatesNothing(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = Bindings(schema) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
