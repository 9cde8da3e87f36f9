package plugins

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

// FuzzDecodeTools: mcphost_tools output is the guest's. Whatever it holds,
// decoding must not panic, must fail with ErrInvalidOutput, and what it
// accepts must be what the go-sdk's AddTool takes without panicking: valid
// unique names, input schemas of type object that resolve.
func FuzzDecodeTools(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}`,
		`{"tools":[{"name":"a","title":"A","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"n":{"type":"integer"}}},"annotations":{"readOnlyHint":true},"icons":[{"src":"https://x/i.png"}],"_meta":{"k":1}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"string"}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object","$ref":"#/$defs/x"}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}}]}`,
		`{"tools":[{"name":"bad name","inputSchema":{"type":"object"}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object"},"icons":{}}]}`,
		`{"tools":[{"name":"a"}]}`, `{"tools":null}`, `{}`, `[]`, ``, `{"tools":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tools, err := decodeTools(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, tl := range tools {
			if !abi.ValidToolName(tl.Def.Name) || seen[tl.Def.Name] || tl.in == nil {
				t.Fatalf("accepted %+v", tl.Def)
			}
			seen[tl.Def.Name] = true
			var m map[string]any
			if err := json.Unmarshal(tl.Def.InputSchema, &m); err != nil || m["type"] != "object" {
				t.Fatalf("accepted input schema %s", tl.Def.InputSchema)
			}
			if (tl.out == nil) != (tl.Def.OutputSchema == nil) {
				t.Fatalf("output schema %s resolved as %v", tl.Def.OutputSchema, tl.out)
			}
			if len(tl.Def.Icons) > 0 {
				var icons []json.RawMessage
				if json.Unmarshal(tl.Def.Icons, &icons) != nil {
					t.Fatalf("accepted icons %s", tl.Def.Icons)
				}
			}
		}
	})
}

// FuzzDecodeToolInvoke: mcphost_tool_invoke output is the guest's: a
// result or a tool error, never both, never neither; a result is a JSON
// object with content, every block of a known type.
func FuzzDecodeToolInvoke(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[],"structuredContent":{"n":1},"isError":false,"_meta":{"a":1}}`,
		`{"structuredContent":{"n":1}}`,
		`{"field":"text","message":"too long"}`, `{"message":"no"}`, `{"message":""}`,
		`{"content":[{"type":"video"}]}`, `{"content":"x"}`, `{"structuredContent":[1]}`,
		`{"tools":[]}`, `{}`, `[]`, `null`, ``, `{"content":[],"_meta":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := decodeToolInvoke(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if (o.Result == nil) == (o.ToolError == nil) {
			t.Fatalf("accepted %+v", o)
		}
		if o.ToolError != nil && o.ToolError.Message == "" {
			t.Fatalf("accepted a tool error without a message")
		}
		if o.Result != nil {
			// Decoded as MCP clients do, field names matched exactly
			// (the go-sdk's codec).
			var r abi.CallToolResult
			if err := strictDecode(o.Result, &r); err != nil || checkResult(&r) != nil {
				t.Fatalf("accepted result %s: %v", o.Result, err)
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(o.Result, &m) != nil || m["content"] == nil {
				t.Fatalf("accepted a result without content: %s", o.Result)
			}
		}
	})
}

// TestSchemaError: validation failures name the field at fault.
func TestSchemaError(t *testing.T) {
	t.Parallel()
	r, err := resolveSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer","maximum":3}},"required":["b"]},"list":{"type":"array","items":{"type":"string"}}},"required":["a"],"additionalProperties":false}`), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, field, msg string }{
		{`{}`, "a", "required"},
		{`{"a":{}}`, "a.b", "required"},
		{`{"a":{"b":9}}`, "a.b", "maximum"},
		{`{"a":{"b":1},"list":[1]}`, "list[]", "type"},
		{`{"a":{"b":1},"zz":1}`, "zz", "additional"},
	} {
		var v any
		_ = json.Unmarshal([]byte(c.in), &v)
		err := r.Validate(v)
		if err == nil {
			t.Fatalf("%s: valid", c.in)
		}
		te := schemaError("", err)
		if te.Field != c.field || !strings.HasPrefix(te.Message, c.field+": ") || !strings.Contains(te.Message, c.msg) {
			t.Errorf("%s: got field %q message %q, want %q with %q", c.in, te.Field, te.Message, c.field, c.msg)
		}
	}
}
