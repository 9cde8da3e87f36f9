package policytest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
	"github.com/mcphost-project/mcphost/abi/policytest"
)

// readOnly is a small policy: it allows only tools whose name starts with
// one of the configured prefixes.
func readOnly() pdk.Policy {
	var prefixes []string
	return pdk.Policy{
		Name:    "read-only",
		Version: "0.1.0",
		Configure: func(cfg pdk.ConfigSource) (err error) {
			prefixes, err = cfg.Strings("prefixes")
			return err
		},
		ToolCall: func(in *abi.ToolCallInput) (*abi.CallDecision, error) {
			for _, p := range prefixes {
				if strings.HasPrefix(in.Tool, p) {
					return pdk.Allow(), nil
				}
			}
			return pdk.Denyf("%s is not a read-only tool", in.Name), nil
		},
	}
}

func ExampleCall() {
	cfg, _ := policytest.ConfigFromJSON([]byte(`{"prefixes": ["get_", "list_"]}`))
	out, err := policytest.Call(readOnly(), cfg, abi.ExportToolCall,
		abi.ToolCallInput{Name: "db__drop", Server: "db", Tool: "drop"})
	fmt.Println(string(out), err)
	// Output:
	// {"action":"deny","reason":"db__drop is not a read-only tool"} <nil>
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	policytest.Run(t, readOnly, "testdata/*.txtar")
}

func TestConfigFromJSON(t *testing.T) {
	t.Parallel()
	cfg, err := policytest.ConfigFromJSON([]byte(`{"s": "text", "n": 3, "b": true, "l": ["a", "b"], "o": {"k": [1]}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := policytest.Config{"s": "text", "n": "3", "b": "true", "l": `["a","b"]`, "o": `{"k":[1]}`}
	if fmt.Sprint(cfg) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", cfg, want)
	}
}

func TestParseCaseErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"no hook":       "-- input.json --\n{}\n-- output.json --\n{}\n",
		"unknown hook":  "hook: tools\n-- input.json --\n{}\n-- output.json --\n{}\n",
		"both":          "hook: tool_call\n-- input.json --\n{}\n-- output.json --\n{}\n-- error --\nx\n",
		"neither":       "hook: tool_call\n-- input.json --\n{}\n",
		"no input":      "hook: tool_call\n-- output.json --\n{}\n",
		"bad section":   "hook: tool_call\n-- input.json --\n{}\n-- output --\n{}\n",
		"config object": "hook: tool_call\n-- config.json --\n[]\n-- input.json --\n{}\n-- output.json --\n{}\n",
	}
	for name, data := range tests {
		if _, err := policytest.ParseCase([]byte(data)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
