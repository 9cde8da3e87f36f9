package plugins

import (
	"errors"
	"strings"
	"testing"
)

func TestJSONDepth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`{}`, 1},
		{`{"a":[1,{"b":[]}]}`, 4},
		{`{"a":"[[[{{{"}`, 1},
		{`{"a":"\"[[","b":[2]}`, 2},
		{`{"a":"\\","b":[[]]}`, 3},
		{`[[[`, 3},
	} {
		if got := jsonDepth([]byte(tc.in)); got != tc.want {
			t.Errorf("jsonDepth(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// A tool plugin's output nested deeper than MaxResultDepth is refused as
// invalid output, saying why; one at the limit is taken.
func TestToolInvokeDepth(t *testing.T) {
	nest := func(n int) string {
		return `{"content":[],"structuredContent":` + strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat("}", n-1) + `}`
	}
	if _, err := decodeToolInvoke([]byte(nest(MaxResultDepth - 1))); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	if _, err := decodeToolInvoke([]byte(nest(MaxResultDepth))); !errors.Is(err, ErrTooDeep) || !errors.Is(err, ErrInvalidOutput) {
		t.Errorf("past the limit: %v, want ErrTooDeep", err)
	}
}
