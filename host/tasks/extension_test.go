package tasks

import (
	"encoding/json"
	"testing"
)

// FuzzDeclares: whether a request's _meta declares the extension is read
// alike by the tasks methods (declares) and by tools/call
// (DecodeExtensionCall), and never panics, whatever the client sends.
func FuzzDeclares(f *testing.F) {
	for _, s := range []string{
		`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`,
		`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":true}}}`,
		`{"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/clientCapabilities":null}`,
		`[]`, `null`, ``, `{"io.modelcontextprotocol/clientCapabilities":{"extensions":[]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		got := declares(meta)
		if !json.Valid(meta) {
			if got {
				t.Fatalf("declares(%q) of invalid JSON", meta)
			}
			return
		}
		params, _ := json.Marshal(map[string]json.RawMessage{"name": json.RawMessage(`"t"`), "_meta": meta})
		if _, ok, err := DecodeExtensionCall(params); err == nil && ok != got {
			t.Fatalf("_meta %s: declares %v, DecodeExtensionCall %v", meta, got, ok)
		}
	})
}
