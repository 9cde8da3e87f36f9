package upstream

import (
	"encoding/json"
	"testing"
)

func TestDecodeExecutions(t *testing.T) {
	got := map[string]json.RawMessage{}
	next, err := DecodeExecutions(json.RawMessage(`{"tools":[
		{"name":"a","inputSchema":{},"execution":{"taskSupport":"required"}},
		{"name":"b","execution":{ "taskSupport" : "optional", "future": [1] }},
		{"name":"c"},
		{"name":"d","execution":"required"},
		{"name":"e","execution":null},
		{"name":"","execution":{}},
		{"name":"f","Execution":{"taskSupport":"required"}},
		{"Name":"g","execution":{"taskSupport":"required"}}
	],"nextCursor":"p2"}`), got)
	if err != nil || next != "p2" {
		t.Fatalf("DecodeExecutions: %q, %v", next, err)
	}
	want := map[string]string{"a": `{"taskSupport":"required"}`, "b": `{ "taskSupport" : "optional", "future": [1] }`}
	if len(got) != len(want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for name, w := range want {
		if string(got[name]) != w {
			t.Errorf("%s: %s, want %s", name, got[name], w)
		}
	}
	if _, err := DecodeExecutions(json.RawMessage(`{"tools":{}}`), got); err == nil {
		t.Error("a result whose tools is not an array was read")
	}
}

// FuzzDecodeExecutions: what a server lists is outside input. Whatever it
// is, DecodeExecutions keeps only valid objects under names.
func FuzzDecodeExecutions(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"a","execution":{"taskSupport":"required"}}]}`,
		`{"tools":[{"name":"a","execution":[]},{"name":"b","execution":{}}],"nextCursor":"x"}`,
		`{"tools":null}`, `{}`, `[]`, `null`, `{"tools":[null,1,"x"]}`, `{"nextCursor":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		into := map[string]json.RawMessage{}
		if _, err := DecodeExecutions(data, into); err != nil {
			return
		}
		for name, e := range into {
			if name == "" || len(e) == 0 || e[0] != '{' || !json.Valid(e) {
				t.Fatalf("kept %q: %q", name, e)
			}
		}
	})
}
