package jsondiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

func TestPaths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		before, after string
		want          []string
	}{
		{`{}`, `{}`, nil},
		{`{"a":1,"b":[1,2]}`, ` { "b" : [1, 2.0], "a" : 1e0 } `, nil},
		{`{"a":1}`, `{"a":2}`, []string{"/a"}},
		{`{"a":1}`, `{"a":1,"b":2}`, []string{"/b"}},
		{`{"a":1,"b":2}`, `{"b":2}`, []string{""}},                                                                // a removed key is named by its object
		{`{"o":{"ghp_secret":1,"k":1}}`, `{"o":{"[REDACTED]":1,"k":2}}`, []string{"/o/[REDACTED]", "/o", "/o/k"}}, // renamed: only the new name
		{`{"o":{"a":1,"b":1,"c":1}}`, `{"o":{"b":2}}`, []string{"/o", "/o/b"}},                                    // once for its object
		{`{"a":{"x":"s","y":[1,2,3]}}`, `{"a":{"x":"t","y":[1,2]}}`, []string{"/a/x", "/a/y/2"}},
		{`{"a":[1]}`, `{"a":[1,{"k":2},3]}`, []string{"/a/1", "/a/2"}},
		{`{"a":{"k":1}}`, `{"a":[1]}`, []string{"/a"}},
		{`{"a":"1"}`, `{"a":1}`, []string{"/a"}},
		{`{"a":null}`, `{"a":false}`, []string{"/a"}},
		{`{"a/b":1,"m~n":1}`, `{"a/b":2,"m~n":2}`, []string{"/a~1b", "/m~0n"}},
		{`1`, `2`, []string{""}},
		{`null`, `{}`, []string{""}},
		{`{"z":1,"a":1,"m":1}`, `{"z":2,"a":2,"m":2}`, []string{"/a", "/m", "/z"}},
		{`{"n":12345678901234567890123}`, `{"n":1.2345678901234567890123e22}`, nil},
		{`{"n":12345678901234567890123}`, `{"n":12345678901234567890124}`, []string{"/n"}},
	} {
		got, truncated, err := Paths([]byte(c.before), []byte(c.after), 0)
		if err != nil || truncated || !slices.Equal(got, c.want) {
			t.Errorf("Paths(%s, %s) = %q, %v, %v; want %q", c.before, c.after, got, truncated, err, c.want)
		}
	}
}

func TestPathsLimit(t *testing.T) {
	t.Parallel()
	got, truncated, err := Paths([]byte(`{"a":1,"b":1,"c":1,"d":1}`), []byte(`{"a":2,"b":2,"c":2,"d":2}`), 2)
	if err != nil || !truncated || !slices.Equal(got, []string{"/a", "/b"}) {
		t.Fatalf("got %q truncated=%v err=%v", got, truncated, err)
	}
	got, truncated, _ = Paths([]byte(`{"a":1,"b":1}`), []byte(`{"a":2,"b":2}`), 2)
	if truncated || len(got) != 2 {
		t.Fatalf("exactly the limit: %q truncated=%v", got, truncated)
	}
}

func TestPathsRefusesWhatIsNotJSON(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{{`{`, `{}`}, {`{}`, ``}, {`{} {}`, `{}`}, {`{}`, `[1] x`}} {
		if _, _, err := Paths([]byte(c[0]), []byte(c[1]), 0); err == nil {
			t.Errorf("Paths(%q, %q): no error", c[0], c[1])
		}
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"/", []string{""}},
		{"/a~1b/m~0n/~01", []string{"a/b", "m~n", "~1"}},
	} {
		got, err := Split(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Split(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := Split("a"); err == nil {
		t.Error(`Split("a"): no error`)
	}
}

func ExamplePaths() {
	before := []byte(`{"path": "/etc/passwd", "mode": "read", "opts": {"follow": true}}`)
	after := []byte(`{"path": "/srv/passwd", "mode": "read", "opts": {}}`)
	paths, _, _ := Paths(before, after, 0)
	fmt.Println(paths)
	// Output: [/opts /path]
}

// FuzzPaths checks, for any two documents: a document equals itself; the
// paths are the same both ways; every path points into one of them, at a
// value that differs; and no path is under another.
func FuzzPaths(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":1}`, `{"a":2}`},
		{`{"a":[1,2,{"b":null}]}`, `{"a":[1,{"b":true}]}`},
		{`{"a/b":{"~":1}}`, `{"a/b":{"~":1.0}}`},
		{`[]`, `{}`},
		{`"x"`, `"x"`},
		{`{"n":1e400}`, `{"n":10e399}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if len(a) > 1<<12 || len(b) > 1<<12 {
			return
		}
		pa, _, errA := Paths(a, a, 0)
		pab, _, err := Paths(a, b, 0)
		if errA != nil {
			if err == nil {
				t.Fatalf("a is not JSON (%v) but Paths(a, b) succeeded", errA)
			}
			return
		}
		if len(pa) != 0 {
			t.Fatalf("a differs from itself at %q", pa)
		}
		if err != nil {
			return
		}
		pba, _, err := Paths(b, a, 0)
		if err != nil || !slices.Equal(pab, pba) {
			t.Fatalf("not symmetric: %q against %q (%v)", pab, pba, err)
		}
		va, _ := decode(a)
		vb, _ := decode(b)
		for i, p := range pab {
			x, inA := lookup(t, va, p)
			y, inB := lookup(t, vb, p)
			if !inA && !inB {
				t.Fatalf("path %q is in neither document", p)
			}
			if inA && inB {
				if more, _, _ := Paths(encode(t, x), encode(t, y), 0); len(more) == 0 {
					t.Fatalf("path %q holds equal values", p)
				}
			}
			for _, q := range pab[:i] {
				if len(p) > len(q) && p[:len(q)] == q && p[len(q)] == '/' {
					t.Fatalf("path %q is under %q", p, q)
				}
			}
		}
	})
}

func lookup(t *testing.T, v any, pointer string) (any, bool) {
	tokens, err := Split(pointer)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i := -1
			fmt.Sscanf(tok, "%d", &i)
			if i < 0 || i >= len(x) || fmt.Sprint(i) != tok {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func encode(t *testing.T, v any) []byte {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
