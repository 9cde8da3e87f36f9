package codemode

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
)

func TestDecodeInput(t *testing.T) {
	for _, c := range []struct{ in, code, err string }{
		{`{"code":"return 1"}`, "return 1", ""},
		{` {"code": "x"} `, "x", ""},
		{`{}`, "", `"code" is required`},
		{`null`, "", `"code" is required`},
		{`{"code":""}`, "", `"code" is empty`},
		{`{"code":1}`, "", "cannot unmarshal number"},
		{`{"code":"x","extra":1}`, "", `unknown field "extra"`},
		{`{"code":"x"}{}`, "", "one JSON object"},
		{`[]`, "", "cannot unmarshal array"},
		{``, "", "EOF"},
		{`{"code":"` + strings.Repeat("x", MaxScript+1) + `"}`, "", "more than 65536"},
	} {
		code, err := DecodeInput(json.RawMessage(c.in))
		if c.err == "" {
			if err != nil || code != c.code {
				t.Errorf("%.40s: %q, %v; want %q", c.in, code, err, c.code)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%.40s: error %v, want one saying %q", c.in, err, c.err)
		}
	}
}

// FuzzDecodeInput: run_code's arguments come from the client: any bytes
// either decode to a script within bounds or fail with ErrInvalidInput.
func FuzzDecodeInput(f *testing.F) {
	for _, s := range []string{`{"code":"return 1"}`, `{}`, `null`, `{"code":"\ud800"}`, `{"code":"x","code":"y"}`, `{"code":"a"} x`, "{\"code\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		code, err := DecodeInput(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %v does not wrap ErrInvalidInput", err)
			}
			return
		}
		if code == "" || len(code) > MaxScript || !json.Valid(b) {
			t.Fatalf("accepted %q from %q", code, b)
		}
	})
}

// FuzzDecodeReport: the report comes from the guest, where a script may
// have replaced the prelude's functions: any bytes fill an Outcome whose
// value is valid JSON within bounds, or say why not.
func FuzzDecodeReport(f *testing.F) {
	for _, s := range []string{`{"value":1,"logs":["a"],"truncated":false}`, `{"error":"x"}`, `{"value":null}`, `{}`, `[]`, `{"value":"` + strings.Repeat("y", 2000) + `"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var o Outcome
		if err := o.decodeReport(b, 1024); err != nil {
			return
		}
		if o.Err == "" && (!json.Valid(o.Value) || len(o.Value) > 1024) {
			t.Fatalf("value %q from %q", o.Value, b)
		}
		if len(o.Err) > maxErrText+len(" [cut]") {
			t.Fatalf("error of %d bytes", len(o.Err))
		}
	})
}

func TestDeclarations(t *testing.T) {
	tools := []abi.Tool{
		{Name: "notes__add", Description: "Adds a note. Notes are kept in memory.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"What to write"},"tags":{"type":"array","items":{"type":"string"}},"pin":{"type":["boolean","null"]}},"required":["text"]}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)},
		{Name: "clock__now", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "a-b", Description: "Ends */ a comment", InputSchema: json.RawMessage(`{"type":"object","properties":{"mode":{"enum":["x","y"]},"n":{"anyOf":[{"type":"integer"},{"type":"string"}]},"m":{"type":"object","additionalProperties":{"type":"number"}}}}`)},
	}
	got := Declarations(tools)
	want := `declare const tools: {
  /** Adds a note. */
  notes__add(args: { pin?: boolean | null; tags?: string[]; text: string /* What to write */; }): { id: number; };
  clock__now(args?: {}): unknown;
  /** Ends * / a comment */
  "a-b"(args?: { m?: Record<string, number>; mode?: "x" | "y"; n?: number | string; }): unknown;
};`
	if got != want {
		t.Errorf("declarations:\n%s\nwant:\n%s", got, want)
	}
	tool := Tool(tools, Limits{Timeout: 5 * time.Second})
	if tool.Name != ToolName || !strings.Contains(tool.Description, want) || !strings.Contains(tool.Description, "5s, 64 MiB of memory, 50 tool calls") {
		t.Errorf("tool %s: %s", tool.Name, tool.Description)
	}
}

// FuzzDeclarations: input and output schemas come from upstream servers:
// any bytes declare a tool, without a panic, on one line.
func FuzzDeclarations(f *testing.F) {
	for _, s := range []string{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"anyOf":[{"anyOf":[{"type":"array","items":{"type":["string","null"]}}]}]}`, `{"enum":["*/",1,null]}`, `{"type":"object","additionalProperties":{"type":"object","properties":{"x":{"description":"a\nb */ c"}}}}`, `[]`, `7`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		got := Declarations([]abi.Tool{{Name: "t", Description: string(schema), InputSchema: schema, OutputSchema: schema}})
		lines := strings.Split(got, "\n")
		if len(lines) < 3 || len(lines) > 4 || !strings.HasPrefix(got, "declare const tools: {\n") || !strings.HasSuffix(got, "\n};") {
			t.Fatalf("declarations:\n%s", got)
		}
	})
}
