package catalog

import (
	"encoding/json"
	"testing"
)

func TestExecution(t *testing.T) {
	required := json.RawMessage(`{"taskSupport":"required"}`)
	for _, c := range []struct {
		name     string
		offers   bool
		upstream json.RawMessage
		want     string
	}{
		{"a server that runs tasks: its word", true, required, `{"taskSupport":"required"}`},
		{"a server that runs tasks and says nothing: forbidden", true, nil, ``},
		{"mcphost runs them", false, nil, `{"taskSupport":"optional"}`},
		{"mcphost runs them, whatever the server says", false, required, `{"taskSupport":"optional"}`},
	} {
		if got := Execution(c.offers, c.upstream); string(got) != c.want {
			t.Errorf("%s: Execution = %s, want %s", c.name, got, c.want)
		}
	}
}
