package upstream

import (
	"bytes"
	"encoding/json"
	"testing"
)

// membersByTokens counts an object's members with encoding/json's
// tokenizer, as uniqueMembers did before it counted colons.
func membersByTokens(raw []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, false
	}
	count := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return 0, false
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return 0, false
		}
		count++
	}
	return count, true
}

func TestUniqueMembers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		n    int
		want bool
	}{
		{`{}`, 0, true},
		{`{"a":1,"b":{"c":2,"d":[{"e":3}]}}`, 2, true},
		{`{"a":1,"a":2}`, 1, false}, // a duplicate: the map holds one
		{`{"a:b":"x:y","c\":":"\\\\:"}`, 2, true},
		{` { "a" : [ ":" , {"b":":"} ] } `, 1, true},
	} {
		if got := uniqueMembers(json.RawMessage(tc.raw), tc.n); got != tc.want {
			t.Errorf("uniqueMembers(%s, %d) = %v, want %v", tc.raw, tc.n, got, tc.want)
		}
	}
}

// FuzzUniqueMembers holds the colon count to encoding/json's tokenizer on
// every valid JSON object.
func FuzzUniqueMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"a:":{"b":[":"]},"c\"":"\\"}`, `{"content":[{"type":"text","text":"x"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		n, ok := membersByTokens(raw)
		if !ok || !json.Valid(raw) {
			return
		}
		if !uniqueMembers(raw, n) || uniqueMembers(raw, n+1) || (n > 0 && uniqueMembers(raw, n-1)) {
			t.Fatalf("uniqueMembers disagrees with the tokenizer's %d members on %q", n, raw)
		}
	})
}
