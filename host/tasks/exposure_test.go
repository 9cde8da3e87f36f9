package tasks

import (
	"encoding/json"
	"testing"
)

func TestUnwrap(t *testing.T) {
	for _, c := range []struct {
		exposure, name, args string
		wantName, wantArgs   string
		whole                bool
	}{
		{"search", "call_tool", `{"name":"up__echo","arguments":{"text":"x"}}`, "up__echo", `{"text":"x"}`, false},
		{"search", "call_tool", `{"name":"search_tools","arguments":{}}`, "call_tool", `{"name":"search_tools","arguments":{}}`, true},
		{"search", "call_tool", `{"arguments":{}}`, "call_tool", `{"arguments":{}}`, true}, // refused as the plain call is
		{"search", "search_tools", `{"query":"q"}`, "search_tools", `{"query":"q"}`, true},
		{"search", "describe_tools", `{"names":["a"]}`, "describe_tools", `{"names":["a"]}`, true},
		{"search", "up__echo", `{}`, "up__echo", `{}`, false},
		{"code", "run_code", `{"code":"return 1"}`, "run_code", `{"code":"return 1"}`, true},
		{"code", "call_tool", `{"name":"up__echo"}`, "call_tool", `{"name":"up__echo"}`, false},
		{"", "run_code", `{}`, "run_code", `{}`, false},
		{"", "call_tool", `{"name":"up__echo"}`, "call_tool", `{"name":"up__echo"}`, false},
	} {
		p := &CallParams{Name: c.name, Arguments: json.RawMessage(c.args)}
		if whole := p.Unwrap(c.exposure); whole != c.whole || p.Name != c.wantName || string(p.Arguments) != c.wantArgs {
			t.Errorf("%q %s %s: %v %s %s, want %v %s %s", c.exposure, c.name, c.args, whole, p.Name, p.Arguments, c.whole, c.wantName, c.wantArgs)
		}
	}
}
