package upstream

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestOffersTasks(t *testing.T) {
	for in, want := range map[string]bool{
		`{"capabilities":{"tasks":{"requests":{"tools":{"call":{}}}}}}`:                                                                               true,
		`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tasks":{"requests":{"tools":{"call":{}}}}}}}`:                                             true,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"capabilities\":{\"tasks\":{\"requests\":{\"tools\":{\"call\":{}}}}}}}\n\n": true,
		`{"capabilities":{"tasks":{"list":{}}}}`:                                                                                                      false,
		`{"capabilities":{"tools":{}}}`:                                                                                                               false,
		`{"capabilities":{"tasks":{"requests":{"tools":{"call":null}}}}}`:                                                                             false,
		`not json`: false,
	} {
		if got := OffersTasks([]byte(in)); got != want {
			t.Errorf("OffersTasks(%s) = %v", in, got)
		}
	}
}

func FuzzOffersTasks(f *testing.F) {
	f.Add([]byte(`{"capabilities":{"tasks":{"requests":{"tools":{"call":{}}}}}}`))
	f.Add([]byte("data: {\"result\":{\"capabilities\":{}}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if OffersTasks(b) && !json.Valid(b) {
			// Only an event stream's data line may carry it then.
			found := false
			for _, line := range splitLines(b) {
				if len(line) > 5 && string(line[:5]) == "data:" {
					found = true
				}
			}
			if !found {
				t.Fatalf("%q offers tasks without a JSON document", b)
			}
		}
	})
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	return append(out, b[start:])
}

func TestResponseFor(t *testing.T) {
	if r, err := responseFor("m", "mcphost-task-1", []byte(`{"jsonrpc":"2.0","id":"mcphost-task-1","result":{"a":1}}`)); err != nil || string(r) != `{"a":1}` {
		t.Errorf("%s %v", r, err)
	}
	if _, err := responseFor("m", "mcphost-task-1", []byte(`{"jsonrpc":"2.0","id":"mcphost-task-2","result":{}}`)); !errors.Is(err, errOtherMessage) {
		t.Errorf("another id: %v", err)
	}
	if _, err := responseFor("m", "mcphost-task-1", []byte(`{"jsonrpc":"2.0","id":"mcphost-task-1","error":{"code":-32602,"message":"no"}}`)); err == nil || errors.Is(err, errOtherMessage) {
		t.Errorf("an error: %v", err)
	}
}

func FuzzResponseFor(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":"mcphost-task-1","result":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := responseFor("m", "mcphost-task-1", b)
		if err == nil && r == nil {
			t.Fatalf("%q: neither a result nor an error", b)
		}
	})
}
