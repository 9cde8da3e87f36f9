package paramheader

import (
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzBindings: any inputSchema an upstream sends is read without
// panicking, and every binding it yields names a valid header.
func FuzzBindings(f *testing.F) {
	f.Add(regionSchema)
	f.Add(`{"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`)
	f.Add(`{"x-mcp-header":1}`)
	f.Fuzz(func(t *testing.T, schema string) {
		bs, err := Bindings(json.RawMessage(schema))
		if err != nil {
			return
		}
		for _, b := range bs {
			if len(b.Path) == 0 || b.Name == "" || http.CanonicalHeaderKey(b.Header()) == "" {
				t.Fatalf("binding %+v", b)
			}
			for i := 0; i < len(b.Name); i++ {
				if !tchar(b.Name[i]) {
					t.Fatalf("binding %+v: name is not a token", b)
				}
			}
		}
	})
}

// FuzzCheck: a client's headers and arguments are checked without
// panicking, and the headers Headers makes for any arguments pass.
func FuzzCheck(f *testing.F) {
	f.Add(`{"region":"us-west1","n":42}`, "us-west1", "42")
	f.Add(`{"region":"=?base64?x?="}`, "=?base64?PT9iYXNlNjQ/eD89?=", "")
	f.Add(`{"where":{"zone":"\u0000"}}`, "", "1e3")
	bs, err := Bindings(json.RawMessage(regionSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args, region, n string) {
		h := http.Header{}
		if region != "" {
			h.Set("Mcp-Param-Region", region)
		}
		if n != "" {
			h.Set("Mcp-Param-N", n)
		}
		_ = Check(h, bs, json.RawMessage(args), true)
		if !json.Valid([]byte(args)) {
			return
		}
		if err := Check(Headers(bs, json.RawMessage(args)), bs, json.RawMessage(args), true); err != nil {
			t.Fatalf("the headers made for %s fail: %v", args, err)
		}
	})
}
