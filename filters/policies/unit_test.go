package policies

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcphost-project/mcphost/internal/secrets"
)

func TestGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"files__read_*", "files__read_file", true},
		{"files__read_*", "files__read_", true},
		{"files__read_*", "files__write_file", false},
		{"*", "", true},
		{"*__*", "a__b", true},
		{"*__*", "ab", false},
		{"?lock__*", "clock__now", true},
		{"?lock__*", "lock__now", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"é?", "éü", true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		if got := g.match(tt.name); got != tt.want {
			t.Errorf("%q matching %q = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"", `a\`, strings.Repeat("x", maxGlob+1)} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted", bad)
		}
	}
}

func TestHumanize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"get_file_contents": "Get File Contents",
		"getFileContents":   "Get File Contents",
		"list-PRs":          "List PRs",
		"a..b__c":           "A B C",
		"ümlaut_test":       "Ümlaut Test",
		"":                  "",
		"__":                "",
		"v2_search":         "V2 Search",
	} {
		if got := Humanize(in); got != want {
			t.Errorf("Humanize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTruncateRunes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s      string
		n      int
		marker string
		want   string
	}{
		{"hello", 5, "…", "hello"},
		{"hello!", 5, "…", "hell…"},
		{"héllo wörld", 6, "…", "héllo…"},
		{"hello!", 2, "[cut]", "he"}, // the marker does not fit: cut without it
		{"hello!", 3, "", "hel"},
	}
	for _, tt := range tests {
		if got, _ := truncateRunes(tt.s, tt.n, tt.marker); got != tt.want {
			t.Errorf("truncateRunes(%q, %d, %q) = %q, want %q", tt.s, tt.n, tt.marker, got, tt.want)
		}
	}
}

func TestObjectKeepsOrder(t *testing.T) {
	t.Parallel()
	o, err := parseObject([]byte(`{"z": 1, "a": {"y": [1, 2]}, "m": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	o.set("a", json.RawMessage(`2`))
	o.set("new", json.RawMessage(`true`))
	o.del("m")
	if got, want := string(o.raw()), `{"z":1,"a":2,"new":true}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	for _, bad := range []string{`[1]`, `{"a":1} x`, `{"a":}`, `"s"`} {
		if _, err := parseObject([]byte(bad)); err == nil {
			t.Errorf("parseObject(%s) accepted", bad)
		}
	}
}

func TestBuiltinSecrets(t *testing.T) {
	t.Parallel()
	yes := []string{
		"ghp_" + strings.Repeat("a", 36), "gho_" + strings.Repeat("B", 36), "ghs_" + strings.Repeat("1", 36),
		"github_pat_" + strings.Repeat("x", 82), "AKIAIOSFODNN7EXAMPLE", "xoxb-123456789012-abc", "xoxp-1-2-3-abcdefghij",
		"sk_live_" + strings.Repeat("a", 24), "rk_live_" + strings.Repeat("a", 24),
		"sk-" + strings.Repeat("a", 48), "sk-proj-" + strings.Repeat("a", 40), "sk-ant-api03-" + strings.Repeat("a", 40),
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
	}
	no := []string{"ghp_short", "AKIA123", "sk-short", "eyJhbGciOiJIUzI1NiJ9", "skeleton-key", "-----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----"}
	r := &redact{patterns: secrets.Credentials(), mask: "[{kind}]"}
	for _, s := range yes {
		n := counts{}
		if out, _ := r.maskString("before "+s+" after", n); n.total() != 1 || strings.Contains(out, s) {
			t.Errorf("%q: masked %v to %q, want it masked once", s, n, out)
		}
	}
	for _, s := range no {
		n := counts{}
		if out, _ := r.maskString(s, n); n.total() != 0 {
			t.Errorf("%q: masked to %q, want it left alone", s, out)
		}
	}
}

func FuzzGlob(f *testing.F) {
	f.Add("files__read_*", "files__read_file")
	f.Add("a*b?c", "aXXbYc")
	f.Add(`a\*`, "a*")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		g, err := compileGlob(pattern)
		if err != nil || !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			return // regexp reads invalid UTF-8 as U+FFFD; tool names are ASCII
		}
		// The same pattern as a regexp is the reference.
		var re strings.Builder
		re.WriteString(`^(?s:`)
		for i := 0; i < len(pattern); i++ {
			switch c := pattern[i]; c {
			case '*':
				re.WriteString(".*")
			case '?':
				re.WriteString(".")
			case '\\':
				i++
				re.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
			default:
				re.WriteString(regexp.QuoteMeta(string([]byte{c})))
			}
		}
		re.WriteString(`)$`)
		want, err := regexp.MatchString(re.String(), name)
		if err != nil {
			t.Fatalf("reference regexp %s: %v", re.String(), err)
		}
		if got := g.match(name); got != want {
			t.Fatalf("glob %q on %q = %v, regexp %s says %v", pattern, name, got, re.String(), want)
		}
	})
}

func FuzzParseMentions(f *testing.F) {
	f.Add(`[{"kind":"server","name":"files"},"tool:clock__now"]`)
	f.Add(`"files"`)
	f.Add(`[1, null, {"kind": 2}]`)
	f.Fuzz(func(t *testing.T, raw string) {
		list, err := ParseMentions(json.RawMessage(raw))
		if err != nil {
			return
		}
		for _, m := range list {
			if m.Kind == "" || m.Name == "" {
				t.Fatalf("accepted an empty mention %+v from %s", m, raw)
			}
		}
	})
}

func FuzzParseObject(f *testing.F) {
	f.Add(`{"a": 1, "b": [true, {"c": null}]}`)
	f.Add(`{"a":1,"a":2}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := parseObject([]byte(raw))
		if err != nil {
			return
		}
		out := o.raw()
		if !json.Valid(out) {
			t.Fatalf("%s re-encoded as invalid JSON %s", raw, out)
		}
		again, err := parseObject(out)
		if err != nil || len(again) != len(o) {
			t.Fatalf("%s: round trip gave %v, %v", raw, again, err)
		}
	})
}

// TestFilterMethods checks the methods allow and deny ask the host for:
// every method whose answer a configuration may change, and no other.
func TestFilterMethods(t *testing.T) {
	t.Parallel()
	all := append(append([]string{}, clientRequests...), upstreamRequests...)
	tests := []struct {
		policy        string
		config        map[string]string
		list, request []string
	}{
		{"allow", map[string]string{"tools": `["*"]`}, listMethods, clientRequests},
		{"allow", map[string]string{"methods": `[]`}, listMethods, all},
		{"deny", map[string]string{"tools": `["*"]`}, nil, nil},
		{"deny", map[string]string{"servers": `[]`}, nil, nil},
		{"deny", map[string]string{"servers": `["shell"]`}, listMethods, all},
		{"deny", map[string]string{"prompts": `["*"]`}, []string{"prompts/list"}, []string{"prompts/get", "completion/complete"}},
		{"deny", map[string]string{"resources": `["*"]`}, []string{"resources/list", "resources/templates/list"},
			[]string{"resources/read", "resources/subscribe", "completion/complete"}},
		{"deny", map[string]string{"methods": `["sampling/*", "resources/templates/*"]`}, []string{"resources/templates/list"}, []string{"sampling/createMessage"}},
		{"deny", map[string]string{"methods": `["*"]`}, listMethods, all},
	}
	for _, tt := range tests {
		p, err := New(tt.policy)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(func(k string) (string, bool) { v, ok := tt.config[k]; return v, ok }); err != nil {
			t.Fatalf("%s %v: %v", tt.policy, tt.config, err)
		}
		h := p.Hints()
		if got := h.Methods["list"]; strings.Join(got, ",") != strings.Join(tt.list, ",") {
			t.Errorf("%s %v: list methods %v, want %v", tt.policy, tt.config, got, tt.list)
		}
		if got := h.Methods["request"]; strings.Join(got, ",") != strings.Join(tt.request, ",") {
			t.Errorf("%s %v: request methods %v, want %v", tt.policy, tt.config, got, tt.request)
		}
	}
}

func TestTemplateGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tmpl, uri string
		want      bool
	}{
		{"notes://inbox/{id}", "notes://inbox/42", true},
		{"notes://inbox/{id}", "notes://inbox/", true}, // loosely: an expression may expand to nothing
		{"notes://inbox/{id}", "notes://archive/42", false},
		{"notes://inbox/{id}", "notes://inbox/{id}", true},
		{"file:///srv/{+path}{?q}", "file:///srv/a/b.txt?q=1", true},
		{"db://{schema}/tables/{table}", "db://public/tables/users", true},
		{"db://{schema}/tables/{table}", "db://public/views/users", false},
		{"a{b", "a{b", false}, // no closed expression: not a template
		{"notes://inbox/1", "notes://inbox/1", false},
	}
	for _, tt := range tests {
		g, ok := templateGlob(tt.tmpl)
		if got := ok && g.match(tt.uri); got != tt.want {
			t.Errorf("template %q on %q = %v, want %v", tt.tmpl, tt.uri, got, tt.want)
		}
	}
}

// TestBase64Size checks the decoded size truncate reads from
// base64 text, which decides what it removes.
func TestBase64Size(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 0, "aGk=": 2, "aGVsbG8gd29ybGQ=": 11, "aGVsbG8=": 5, "aGVs": 3, "==": 0, "=": 0} {
		if got := base64Size(s); got != want {
			t.Errorf("base64Size(%q) = %d, want %d", s, got, want)
		}
	}
}
