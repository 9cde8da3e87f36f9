package main

import (
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

func TestHookInputWarnings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		hook, in string
		want     []string // each a part of one warning, in order
	}{
		{abi.HookToolCall, `{"name":"a__b","server":"a","tool":"b"}`, nil},
		{abi.HookToolCall, `{"tool":"b"}`, []string{`"name"`, `"server"`}},
		{abi.HookToolResult, `{"name":"a__b","server":"a","tool":"b"}`, []string{`"result"`}},
		{abi.HookToolsList, `{"tools":[],"extra":1}`, []string{`unknown field "extra"`}},
		{abi.HookToolsList, `[1]`, []string{"not a tools_list input"}},
		{"nosuch", `{}`, nil},
	} {
		got := hookInputWarnings(tc.hook, []byte(tc.in))
		if len(got) != len(tc.want) {
			t.Errorf("%s %s: %q, want %d warnings", tc.hook, tc.in, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s %s: warning %d %q lacks %q", tc.hook, tc.in, i, got[i], w)
			}
		}
	}
}

// FuzzHookInputWarnings: any input file, for any hook, gets warnings or
// none, never a panic.
func FuzzHookInputWarnings(f *testing.F) {
	f.Add(abi.HookToolCall, `{"tool":"b","arguments":{"x":1}}`)
	f.Add(abi.HookToolResult, `{"result":{"content":[{"type":"text","text":"x"}]}}`)
	f.Add(abi.HookMessage, `{"method":"resources/read"}`)
	f.Fuzz(func(t *testing.T, hook, in string) {
		for _, w := range hookInputWarnings(hook, []byte(in)) {
			if w == "" {
				t.Fatal("an empty warning")
			}
		}
	})
}
