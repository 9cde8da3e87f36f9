package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/quota"
)

func TestQuotaBlocks(t *testing.T) {
	src := `
server "gh" {
  command = "gh-mcp"
}
quota "interns" {
  groups  = ["interns"]
  servers = ["gh"]
  tools   = ["create_*"]
  calls   = 60
  window  = "1h"
}
quota "slots" {
  subjects   = ["alice", "bob"]
  concurrent = 4
  per        = "quota"
}
quota "per-minute" {
  calls = 100
}
`
	file, diags := Parse([]byte(src), "/etc/mcphost/mcphost.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := []quota.Quota{
		{Name: "interns", Groups: []string{"interns"}, Servers: []string{"gh"}, Tools: []string{"create_*"}, Calls: 60, Window: time.Hour},
		{Name: "slots", Subjects: []string{"alice", "bob"}, Concurrent: 4, Per: quota.PerQuota},
		{Name: "per-minute", Calls: 100},
	}
	if !reflect.DeepEqual(file.Host.Quotas, want) {
		t.Errorf("quotas\n got %+v\nwant %+v", file.Host.Quotas, want)
	}
	if err := file.Host.WithDefaults().Validate(); err != nil {
		t.Error(err)
	}
}

// TestQuotaSpec: the admin API's JSON reads strictly and is checked as a
// quota block is.
func TestQuotaSpec(t *testing.T) {
	for _, c := range []struct {
		body, field, detail string
		syntax              bool
	}{
		{`{"cals":1}`, "cals", `Did you mean "calls"?`, true},
		{`{"calls":"1"}`, "calls", "expected an integer", true},
		{`{"calls":1} {}`, "", "more than one JSON value", true},
		{`{}`, "calls", "sets neither", false},
		{`{"calls":1,"window":"soon"}`, "window", "not a duration", false},
		{`{"concurrent":1,"window":"1m"}`, "window", "does not set", false},
		{`{"calls":1,"per":"tool"}`, "per", `"subject" or "quota"`, false},
	} {
		spec, err := DecodeQuotaSpec([]byte(c.body))
		if err == nil {
			_, err = spec.Quota("q")
		}
		se, ok := err.(*SpecError)
		if !ok || se.Syntax != c.syntax || len(se.Errors) == 0 || se.Errors[0].Field != c.field || !strings.Contains(se.Errors[0].Detail, c.detail) {
			t.Errorf("%s: %#v, want field %q with %q (syntax %v)", c.body, err, c.field, c.detail, c.syntax)
		}
	}
	spec, err := DecodeQuotaSpec([]byte(`{"groups":["g"],"tools":["a*"],"calls":5,"window":"30s","concurrent":2}`))
	if err != nil {
		t.Fatal(err)
	}
	q, err := spec.Quota("q")
	want := quota.Quota{Name: "q", Groups: []string{"g"}, Tools: []string{"a*"}, Calls: 5, Window: 30 * time.Second, Concurrent: 2, Per: quota.PerSubject}
	if err != nil || !reflect.DeepEqual(q, want) {
		t.Errorf("got %+v %v, want %+v", q, err, want)
	}
}

// FuzzQuotaSpec: whatever the admin API is sent, it is refused with the
// fields at fault (each a quota's own name, or none), or read as a quota
// that passes the host's checks and reads back the same from its JSON.
func FuzzQuotaSpec(f *testing.F) {
	for _, s := range []string{
		`{"calls":60,"window":"1m"}`, `{"concurrent":4,"per":"quota"}`, `{"subjects":["a"],"groups":["b"],"servers":["s"],"tools":["t*"],"calls":1}`,
		`{"calls":1,"window":"-1s"}`, `{"calls":1e3}`, `{"window":"1h","calls":99999999999}`, `{"cals":1}`, `[]`, `{"tools":[""],"calls":1}`,
	} {
		f.Add([]byte(s))
	}
	known := map[string]bool{"": true}
	for _, a := range quotaSchema.Attributes {
		known[a.Name] = true
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := DecodeQuotaSpec(body)
		if err == nil {
			var q quota.Quota
			if q, err = spec.Quota("q"); err == nil {
				if ps := q.Check(); ps != nil {
					t.Fatalf("%s: accepted a quota the host refuses: %v", body, ps)
				}
				again, err := QuotaSpecOf(q).Quota("q")
				if err != nil || !reflect.DeepEqual(again, q) {
					t.Fatalf("%s: %+v reads back as %+v, %v", body, q, again, err)
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
