package toolformat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

func catalog() []abi.Tool {
	long := "a_really_long_server_name_for_the_test_of_names__get_resource_reference_now"
	return []abi.Tool{
		{Name: "clock__now", Server: "clock", Tool: "now", Description: "Tells the time.",
			InputSchema: json.RawMessage(`{"type":"object","$schema":"http://json-schema.org/draft-07/schema#","properties":{"zone":{"type":["string","null"]},"unit":{"const":"s"},"spec":{"$ref":"#/$defs/Spec"}},"additionalProperties":false,"$defs":{"Spec":{"type":"object","properties":{"n":{"type":"integer"}}}}}`)},
		{Name: long, Server: "x", Tool: "get_resource_reference_now", Title: "Get a reference"},
	}
}

func TestConvert(t *testing.T) {
	t.Parallel()
	for _, p := range []Provider{OpenAI, Anthropic, Gemini, MCP} {
		t.Run(string(p), func(t *testing.T) {
			s, err := Convert(p, catalog())
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(s.Definitions, &v); err != nil {
				t.Fatal(err)
			}
			long := catalog()[1].Name
			for name, exposed := range s.names {
				if p != MCP && (len(name) > maxProviderName || !providerName().MatchString(name)) {
					t.Errorf("%q is not a name %s takes", name, p)
				}
				if got, ok := s.Exposed(name); !ok || got != exposed {
					t.Errorf("Exposed(%q) = %q, %v", name, got, ok)
				}
			}
			if p != MCP {
				if _, ok := s.Exposed(long); ok {
					t.Errorf("the %d-character name went to %s uncut", len(long), p)
				}
				if !strings.Contains(string(s.Definitions), `"description":"Get a reference"`) {
					t.Errorf("a tool without a description lacks its title as one: %s", s.Definitions)
				}
			}
			if !strings.Contains(string(s.Definitions), `"properties":{}`) {
				t.Errorf("a tool without a schema lacks an object one: %s", s.Definitions)
			}
		})
	}
}

func TestGeminiSchema(t *testing.T) {
	t.Parallel()
	s, err := Convert(Gemini, catalog()[:1])
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"functionDeclarations":[{"description":"Tells the time.","name":"clock__now","parameters":{"properties":{"spec":{"properties":{"n":{"type":"integer"}},"type":"object"},"unit":{"enum":["s"],"type":"string"},"zone":{"nullable":true,"type":"string"}},"type":"object"}}]}]`
	if string(s.Definitions) != want {
		t.Fatalf("got  %s\nwant %s", s.Definitions, want)
	}
}

// TestGeminiEnums: Gemini takes enums of strings only; others must not turn
// into strings, which would change the arguments the model sends.
func TestGeminiEnums(t *testing.T) {
	t.Parallel()
	s, err := Convert(Gemini, []abi.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"n":{"type":"integer","enum":[1,2]},"b":{"const":true,"description":"Flag."},"s":{"type":["string","null"],"enum":["a",null]}}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	want := `"properties":{"b":{"description":"Flag. One of: true."},"n":{"description":"One of: 1, 2.","type":"integer"},"s":{"enum":["a"],"nullable":true,"type":"string"}}`
	if !strings.Contains(string(s.Definitions), want) {
		t.Fatalf("got %s\nwant it to contain %s", s.Definitions, want)
	}
}

func TestConvertRefusals(t *testing.T) {
	t.Parallel()
	for name, schema := range map[string]string{
		"not an object":   `[1]`,
		"not type object": `{"type":"string"}`,
		"a remote ref":    `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`,
		"a dangling ref":  `{"type":"object","properties":{"a":{"$ref":"#/$defs/Nope"}}}`,
	} {
		p := Gemini
		if name == "not an object" || name == "not type object" {
			p = OpenAI
		}
		if _, err := Convert(p, []abi.Tool{{Name: "t", InputSchema: json.RawMessage(schema)}}); err == nil {
			t.Errorf("%s: converted", name)
		}
	}
	if _, err := Convert("cohere", nil); err != nil {
		t.Errorf("no tools, unknown provider: %v (nothing to convert)", err)
	}
	if _, err := Convert("cohere", catalog()); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Errorf("unknown provider: %v", err)
	}
}

// FuzzGeminiSchema feeds arbitrary input schemas (an upstream's, outside
// input) through the conversion: no panic, JSON out, and nothing Gemini
// refuses left in it.
func FuzzGeminiSchema(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/A"}}}`,
		`{"properties":{"x":{"type":["null"]},"y":{"oneOf":[{"const":1},{"type":["integer","string"]}]}}}`, `{"properties":{"a":true,"b":false}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		set, err := Convert(Gemini, []abi.Tool{{Name: "t", InputSchema: raw}})
		if err != nil {
			return
		}
		if !json.Valid(set.Definitions) {
			t.Fatalf("invalid JSON: %s", set.Definitions)
		}
		var defs []struct {
			FunctionDeclarations []struct{ Parameters map[string]any }
		}
		if err := json.Unmarshal(set.Definitions, &defs); err != nil {
			t.Fatal(err)
		}
		if bad := refused(defs[0].FunctionDeclarations[0].Parameters); bad != "" {
			t.Fatalf("%s left in %s", bad, set.Definitions)
		}
	})
}

// refused returns a key of schema (at any depth, property names aside)
// that Gemini does not take, or "".
func refused(schema map[string]any) string {
	for k, v := range schema {
		if _, ok := geminiKeys[k]; !ok {
			return k
		}
		switch k {
		case "properties":
			for _, p := range v.(map[string]any) {
				if bad := refused(p.(map[string]any)); bad != "" {
					return bad
				}
			}
		case "items":
			if bad := refused(v.(map[string]any)); bad != "" {
				return bad
			}
		case "anyOf":
			for _, p := range v.([]any) {
				if bad := refused(p.(map[string]any)); bad != "" {
					return bad
				}
			}
		}
	}
	return ""
}

// TestGeminiFormats: a JSON Schema format outside Gemini's list (uri,
// email) is dropped; one it lists (date-time, int64) stays.
func TestGeminiFormats(t *testing.T) {
	t.Parallel()
	out, err := geminiSchema(map[string]any{"type": "object", "properties": map[string]any{
		"site": map[string]any{"type": "string", "format": "uri"},
		"at":   map[string]any{"type": "string", "format": "date-time"},
		"n":    map[string]any{"type": "integer", "format": "int64"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	props := out["properties"].(map[string]any)
	if _, ok := props["site"].(map[string]any)["format"]; ok {
		t.Errorf("uri kept: %v", props["site"])
	}
	if props["at"].(map[string]any)["format"] != "date-time" || props["n"].(map[string]any)["format"] != "int64" {
		t.Errorf("formats Gemini lists dropped: %v", props)
	}
}
