package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/toolset"
)

func TestToolsetBlocks(t *testing.T) {
	src := `
server "fs" {
  command = "fs-mcp"
}
toolset "ide" {
  description = "files, no writes"
  servers  = ["fs"]
  tools    = ["read_*", "list_*"]
  exclude  = ["read_media_file"]
  exposure = "search"
  always   = ["fs__read_text_file"]
}
toolset "all" {
}
`
	file, diags := Parse([]byte(src), "/etc/mcphost/mcphost.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := []toolset.Toolset{
		{Name: "ide", Description: "files, no writes", Servers: []string{"fs"}, Tools: []string{"read_*", "list_*"}, Exclude: []string{"read_media_file"}, Exposure: "search", Always: []string{"fs__read_text_file"}},
		{Name: "all"},
	}
	if !reflect.DeepEqual(file.Host.Toolsets, want) {
		t.Errorf("toolsets\n got %+v\nwant %+v", file.Host.Toolsets, want)
	}
	if err := file.Host.WithDefaults().Validate(); err != nil {
		t.Error(err)
	}
}

// TestToolsetBlockProblems: each mistake is reported at its argument; a
// server no block declares is a warning (the admin API may add it).
func TestToolsetBlockProblems(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`toolset "a/b" {}`, "Invalid toolset name"},
		{`toolset "x" { exposure = "lots" }`, `exposure must be "list", "search" or "code"`},
		{`toolset "x" { always = ["a"] }`, "always names the tools listed beside"},
		{`toolset "x" { tools = [""] }`, "empty string"},
		{`toolset "x" { tool = ["a"] }`, `Did you mean "tools"?`},
		{"toolset \"x\" {}\ntoolset \"x\" {}", "Duplicate toolset name"},
	} {
		_, diags := Parse([]byte(c.src), "/c.hcl")
		if !diags.HasErrors() || !strings.Contains(diags.List.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.src, diags, c.want)
		}
	}
	_, diags := Parse([]byte(`toolset "x" { servers = ["gh"] }`), "/c.hcl")
	if diags.HasErrors() || diags == nil || len(diags.List) != 1 || !strings.Contains(diags.List[0].Summary, "Unknown server in toolset") {
		t.Errorf("a toolset of an undeclared server: %v, want one warning", diags)
	}
}

// TestToolsetSpec: the admin API's JSON reads strictly and is checked as
// a toolset block is.
func TestToolsetSpec(t *testing.T) {
	for _, c := range []struct {
		body, field, detail string
		syntax              bool
	}{
		{`{"tool":["a"]}`, "tool", `Did you mean "tools"?`, true},
		{`{"tools":"a"}`, "tools", "", true},
		{`{} {}`, "", "more than one JSON value", true},
		{`{"exposure":"most"}`, "exposure", `not "most"`, false},
		{`{"always":["a"]}`, "always", "set exposure", false},
	} {
		spec, err := DecodeToolsetSpec([]byte(c.body))
		if err == nil {
			_, err = spec.Toolset("t")
		}
		se, ok := err.(*SpecError)
		if !ok || se.Syntax != c.syntax || len(se.Errors) == 0 || se.Errors[0].Field != c.field || !strings.Contains(se.Errors[0].Detail, c.detail) {
			t.Errorf("%s: %#v, want field %q with %q (syntax %v)", c.body, err, c.field, c.detail, c.syntax)
		}
	}
	spec, err := DecodeToolsetSpec([]byte(`{"servers":["fs"],"tools":["read_*"],"exposure":"code","always":["fs__read_file"]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := spec.Toolset("ide")
	want := toolset.Toolset{Name: "ide", Servers: []string{"fs"}, Tools: []string{"read_*"}, Exposure: "code", Always: []string{"fs__read_file"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v %v, want %+v", got, err, want)
	}
	if _, err := spec.Toolset("a b"); err == nil {
		t.Error("a toolset named with a space was accepted")
	}
}

// FuzzToolsetSpec: whatever the admin API is sent, it is refused with the
// fields at fault (a toolset's own names, or none), or read as a toolset
// that passes the host's checks and reads back the same from its JSON.
func FuzzToolsetSpec(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"servers":["fs"],"tools":["read_*"],"exclude":["x"]}`, `{"exposure":"search","always":["a"]}`,
		`{"exposure":"x"}`, `{"tools":[""]}`, `{"tool":1}`, `[]`, `{"description":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	known := map[string]bool{"": true, "name": true}
	for _, a := range toolsetSchema.Attributes {
		known[a.Name] = true
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := DecodeToolsetSpec(body)
		if err == nil {
			var ts toolset.Toolset
			if ts, err = spec.Toolset("t"); err == nil {
				if ps := ts.Check(); ps != nil {
					t.Fatalf("%s: accepted a toolset the host refuses: %v", body, ps)
				}
				again, err := ToolsetSpecOf(ts).Toolset("t")
				if err != nil || !reflect.DeepEqual(again, ts) {
					t.Fatalf("%s: %+v reads back as %+v, %v", body, ts, again, err)
				}
				return
			}
		}
		se, ok := err.(*SpecError)
		if !ok || len(se.Errors) == 0 {
			t.Fatalf("%s: %v is not a SpecError with fields", body, err)
		}
		for _, fe := range se.Errors {
			if !se.Syntax && !known[fe.Field] || fe.Detail == "" {
				t.Fatalf("%s: field %q, detail %q", body, fe.Field, fe.Detail)
			}
		}
	})
}
