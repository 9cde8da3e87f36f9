package tasks

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestFailedWith: an upstream's JSON-RPC error fails the task with its
// code (0, which the go-sdk's server sends for a handler's plain error,
// becomes -32603) and the text of the error result as the policies left
// it; the error keeps its code through the store.
func TestFailedWith(t *testing.T) {
	res := OutcomeOf(json.RawMessage(`{"content":[{"type":"text","text":"server \"up\": [REDACTED] failed"},{"type":"image","data":"x"}],"isError":true}`), nil)
	for _, tc := range []struct {
		code, want int64
	}{{-32001, -32001}, {0, jsonrpc.CodeInternalError}} {
		out := FailedWith(tc.code, res)
		var je *jsonrpc.Error
		if out.Result != nil || out.Failed || !errors.As(out.Err, &je) || je.Code != tc.want || je.Message != `server "up": [REDACTED] failed` {
			t.Errorf("FailedWith(%d): %+v", tc.code, out)
			continue
		}
		back, err := DecodeOutcome(EncodeOutcome(out))
		if e := errorOf(back.Err); err != nil || e.Code != tc.want || e.Message != je.Message {
			t.Errorf("FailedWith(%d) through the store: %+v %v", tc.code, back, err)
		}
	}
	if out := FailedWith(-32001, OutcomeOf(json.RawMessage(`{"content":[]}`), nil)); out.Err == nil || out.Err.Error() == "" {
		t.Errorf("an error result without text: %+v", out)
	}
	kept := Outcome{Err: &jsonrpc.Error{Code: -32602, Message: "bad"}}
	if out := FailedWith(-32001, kept); out.Err != kept.Err {
		t.Errorf("an outcome that is an error already changed: %+v", out)
	}
}
