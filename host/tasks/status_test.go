package tasks

import (
	"encoding/json"
	"testing"
)

func TestDecodeStatus(t *testing.T) {
	m, id, err := DecodeStatus(json.RawMessage(`{"taskId":"t-1","status":"working","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}}`))
	if err != nil || id != "t-1" || string(m["status"]) != `"working"` || m["_meta"] != nil {
		t.Errorf("DecodeStatus: %v %q %v", m, id, err)
	}
	for _, bad := range []string{``, `null`, `[]`, `{}`, `{"taskId":""}`, `{"taskId":7}`} {
		if _, _, err := DecodeStatus(json.RawMessage(bad)); err == nil {
			t.Errorf("DecodeStatus(%s): no error", bad)
		}
	}
}

func FuzzDecodeStatus(f *testing.F) {
	f.Add([]byte(`{"taskId":"t-1","status":"completed","createdAt":"x","lastUpdatedAt":"y","ttl":null}`))
	f.Add([]byte(`{"taskId":"a","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"b"},"k":1}}`))
	f.Add([]byte(`{"taskId":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, id, err := DecodeStatus(b)
		if err != nil {
			return
		}
		var again string
		if id == "" || json.Unmarshal(m["taskId"], &again) != nil || again != id {
			t.Fatalf("DecodeStatus(%q): id %q, members %v", b, id, m)
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(m["_meta"], &meta) == nil && meta[RelatedTaskKey] != nil {
			t.Fatalf("DecodeStatus(%q) kept the server's related task", b)
		}
	})
}
