package tasks

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDecodeUpdate: tasks/update's answers of MCP's shapes are decoded;
// one of no known shape is left out, not an error (an answer to no
// question is ignored); params that are not an object are an error.
func TestDecodeUpdate(t *testing.T) {
	p, answers, err := DecodeUpdate(json.RawMessage(`{"taskId":"t","inputResponses":{"a":{"action":"accept","content":{"x":"y"}},"b":{"x":1},"c":{"roots":[]}}}`))
	if err != nil || p.TaskID != "t" || len(answers) != 2 {
		t.Fatalf("DecodeUpdate: %+v %v %v", p, answers, err)
	}
	if e, ok := answers["a"].(*mcp.ElicitResult); !ok || e.Action != "accept" {
		t.Errorf("answers[a] = %#v", answers["a"])
	}
	if _, ok := answers["c"].(*mcp.ListRootsResult); !ok {
		t.Errorf("answers[c] = %#v", answers["c"])
	}
	if _, _, err := DecodeUpdate(json.RawMessage(`[]`)); err == nil {
		t.Error("DecodeUpdate of an array: no error")
	}
}

func FuzzDecodeUpdate(f *testing.F) {
	for _, s := range []string{`{"taskId":"t","inputResponses":{"a":{"action":"accept","content":{"x":"y"}}}}`,
		`{"inputResponses":{"k":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}}`,
		`{"inputResponses":{"k":{"roots":[{"uri":"file:///x"}]}}}`, `{"inputResponses":null}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, answers, err := DecodeUpdate(b)
		if err != nil {
			return
		}
		for k, a := range answers {
			if a == nil || p.InputResponses[k] == nil {
				t.Fatalf("answer %q: %v without its response", k, a)
			}
		}
	})
}
