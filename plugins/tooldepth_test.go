package plugins

import (
	"errors"
	"strings"
	"testing"
)

func TestJSONDepth(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// A policy's result (a respond decision, a tool_result's replacement) is
// held to the same limit as a tool plugin's; one at the limit is taken.
func TestPolicyResultDepth(t *testing.T) {
	t.Parallel()
	result := func(n int) string {
		return `{"content":[],"structuredContent":` + strings.Repeat(`{"a":`, n-2) + `{}` + strings.Repeat("}", n-2) + `}`
	}
	for _, tc := range []struct {
		name   string
		decode func(string) error
	}{
		{"respond", func(r string) error {
			_, err := decodeCallDecision([]byte(`{"action":"respond","result":` + r + `}`))
			return err
		}},
		{"tool_result", func(r string) error { _, err := decodeToolResult([]byte(`{"result":` + r + `}`)); return err }},
	} {
		if err := tc.decode(result(MaxResultDepth)); err != nil {
			t.Errorf("%s at the limit: %v", tc.name, err)
		}
		if err := tc.decode(result(MaxResultDepth + 1)); !errors.Is(err, ErrTooDeep) || !errors.Is(err, ErrInvalidOutput) {
			t.Errorf("%s past the limit: %v, want ErrTooDeep", tc.name, err)
		}
	}
	if _, err := decodeCallDecision([]byte(`{"action":"rewrite","arguments":` + result(MaxResultDepth+8) + `}`)); err != nil {
		t.Errorf("a rewrite's arguments are no result: %v", err)
	}
}
