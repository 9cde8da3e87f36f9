package config

import (
	"reflect"
	"testing"
)

// FuzzServerSpecJSONMatchesText: any definition the API reads decodes
// through HCL's JSON syntax to the server the text path gave, or to the
// same errors at the same fields. Values are read as written: "${...}"
// and "%{...}" call nothing and refuse nothing, as in the text path.
func FuzzServerSpecJSONMatchesText(f *testing.F) {
	for _, s := range definitions {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"name":"n","command":"sh","env":{"e\u0301":"e\u0301","\u0000":"\u2028"}}`,
		`{"name":"e\u0301","command":"\u00e9"}`,
		`{"name":"x","transport":"http","url":"https://x/${a}","headers":{"%{b}":"$${c}"}}`,
		`{"name":"x","command":"sh","args":["\\","\"","\n","\ud83d\ude00"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := DecodeServerSpec(body)
		if err != nil {
			return
		}
		viaJSON, jsonErr := spec.Server("/etc/mcphost/mcphost.hcl")
		viaText, textErr := spec.serverFromText("/etc/mcphost/mcphost.hcl")
		if !reflect.DeepEqual(viaJSON, viaText) {
			t.Fatalf("%s:\n json %+v\n text %+v", body, viaJSON, viaText)
		}
		if !reflect.DeepEqual(jsonErr, textErr) {
			t.Fatalf("%s:\n json %s\n text %s", body, fieldErrors(jsonErr), fieldErrors(textErr))
		}
	})
}
