package glob

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*c", "abc", true}, {"a*c", "ac", true},
		{"a*c", "abd", false}, {"*b*", "abc", true}, {"a**", "a", true}, {"abc", "abc", true},
		{"abc", "abcd", false}, {"*a*a*a*a*b", strings.Repeat("a", 200), false}, {"x*", "", false},
	} {
		if got := Match(c.p, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}
