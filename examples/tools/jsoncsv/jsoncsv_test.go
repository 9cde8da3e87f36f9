package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi/pdk/tool"
	"github.com/mcphost-project/mcphost/internal/tooltest"
)

var hashGlobs = []string{"*.go", "../../../abi/*.go", "../../../abi/pdk/*.go", "../../../abi/pdk/tool/*.go", "../../../go.mod", "../../../go.sum"}

func TestToCSV(t *testing.T) {
	t.Parallel()
	out, err := ToCSV(nil, ToCSVIn{JSON: `[{"name":"Ann","age":31,"tags":["a","b"]},{"age":7,"name":"Bo, Jr.","city":null},{"city":"Oslo"}]`})
	if err != nil {
		t.Fatal(err)
	}
	want := "name,age,tags,city\nAnn,31,\"[\"\"a\"\",\"\"b\"\"]\",\n\"Bo, Jr.\",7,,\n,,,Oslo\n"
	if out.CSV != want || out.Rows != 3 {
		t.Errorf("got %q (%d rows), want %q", out.CSV, out.Rows, want)
	}
	out, err = ToCSV(nil, ToCSVIn{JSON: `[{"a":1,"b":2}]`, Columns: []string{"b", "a"}, Delimiter: ";"})
	if err != nil || out.CSV != "b;a\n2;1\n" {
		t.Errorf("columns and delimiter: %q %v", out.CSV, err)
	}
	for _, c := range []struct {
		in    ToCSVIn
		field string
	}{
		{ToCSVIn{JSON: `{"a":1}`}, "json"},
		{ToCSVIn{JSON: `[1]`}, "json"},
		{ToCSVIn{JSON: `[]`, Delimiter: "ab"}, "delimiter"},
	} {
		_, err := ToCSV(nil, c.in)
		var fe *tool.FieldError
		if !asField(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: want an error on %s, got %v", c.in, c.field, err)
		}
	}
}

func asField(err error, fe **tool.FieldError) bool {
	f, ok := err.(*tool.FieldError)
	*fe = f
	return ok
}

func TestToJSON(t *testing.T) {
	t.Parallel()
	out, err := ToJSON(nil, ToJSONIn{CSV: "name,age\nAnn,31\n\"Bo, Jr.\",7\n"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	if want := `{"rows":[{"age":"31","name":"Ann"},{"age":"7","name":"Bo, Jr."}],"columns":["name","age"]}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	for _, in := range []ToJSONIn{{CSV: ""}, {CSV: "a,b\n1\n"}, {CSV: "a\n\"x\n"}} {
		var fe *tool.FieldError
		if _, err := ToJSON(nil, in); !asField(err, &fe) || fe.Field != "csv" {
			t.Errorf("%q: want an error on csv, got %v", in.CSV, err)
		}
	}
}

// TestJSONCSVThroughMcphost builds the plugin and calls both tools through
// mcphost over HTTP, there and back.
func TestJSONCSVThroughMcphost(t *testing.T) {
	t.Parallel()
	wasm := tooltest.BuildGo(t, "jsoncsv", ".", hashGlobs)
	r := tooltest.Serve(t, t.TempDir(), fmt.Sprintf("tools_plugin \"data\" {\n  source = %q\n}\n", wasm))
	res := r.Call(t, "data__json_to_csv", map[string]any{"json": `[{"id":1,"ok":true},{"id":2,"ok":false}]`})
	var out ToCSVOut
	if b, _ := json.Marshal(res.StructuredContent); res.IsError || json.Unmarshal(b, &out) != nil || out.CSV != "id,ok\n1,true\n2,false\n" {
		t.Fatalf("json_to_csv: %q", tooltest.Text(res))
	}
	res = r.Call(t, "data__csv_to_json", map[string]any{"csv": out.CSV})
	if res.IsError || !strings.Contains(tooltest.Text(res), `{"id":"2","ok":"false"}`) {
		t.Errorf("csv_to_json: %q", tooltest.Text(res))
	}
	if res := r.Call(t, "data__json_to_csv", map[string]any{"json": "nope"}); !res.IsError || !strings.HasPrefix(tooltest.Text(res), "json:") {
		t.Errorf("bad json: %q", tooltest.Text(res))
	}
}
