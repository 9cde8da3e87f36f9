package tasks

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestDecodeCall(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ok, bad bool
	}{
		{`{"name":"a","arguments":{}}`, false, false},
		{`{"name":"a","task":{}}`, true, false},
		{`{"name":"a","task":{"ttl":1000},"_meta":{"x":1}}`, true, false},
		{`{"name":"a","task":{"ttl":-1}}`, false, true},
		{`{"task":{}}`, false, true},
		{`{"name":"a","task":{},"_meta":[1]}`, false, true},
		{`{"name":"a","task":"x"}`, false, true},
		{`[]`, false, true},
	} {
		p, ok, err := DecodeCall(json.RawMessage(tc.in))
		if ok != tc.ok || (err != nil) != tc.bad {
			t.Errorf("DecodeCall(%s) = %+v, %v, %v", tc.in, p, ok, err)
		}
	}
}

func TestDecodeRequest(t *testing.T) {
	for in, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}`: true,
		`{"jsonrpc":"2.0","id":"a","method":"tasks/list"}`:                      true,
		`{"jsonrpc":"2.0","method":"tasks/get"}`:                                false,
		`{"jsonrpc":"2.0","id":null,"method":"tasks/get"}`:                      false,
		`{"jsonrpc":"2.0","id":{},"method":"tasks/get"}`:                        false,
		`{"jsonrpc":"1.0","id":1,"method":"tasks/get"}`:                         false,
		`[{"jsonrpc":"2.0","id":1,"method":"tasks/get"}]`:                       false,
	} {
		if _, err := DecodeRequest([]byte(in)); (err == nil) != want {
			t.Errorf("DecodeRequest(%s): %v", in, err)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":5}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tasks/result","params":{"taskId":"mcpt1.a.b.c"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{"cursor":"c"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeRequest(body)
		if err != nil {
			return
		}
		if !json.Valid(r.ID) || r.Method == "" {
			t.Fatalf("accepted %q with id %q", body, r.ID)
		}
		if p, ok, err := DecodeCall(r.Params); ok && (err != nil || p.Task == nil || p.Name == "") {
			t.Fatalf("DecodeCall(%q) = %+v, %v", r.Params, p, err)
		}
		if id, err := DecodeTaskID(r.Params); err == nil && id == "" {
			t.Fatal("an empty task id was accepted")
		}
		_, _ = DecodeCursor(r.Params)
	})
}

func TestWithCapability(t *testing.T) {
	res := &mcp.InitializeResult{ProtocolVersion: Version, Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}, ServerInfo: &mcp.Implementation{Name: "x"}}
	b, err := json.Marshal(WithCapability(res, true))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Capabilities map[string]json.RawMessage
		ServerInfo   struct{ Name string }
	}
	if err := json.Unmarshal(b, &got); err != nil || string(got.Capabilities["tasks"]) != capability || got.Capabilities["tools"] == nil || got.ServerInfo.Name != "x" {
		t.Errorf("%s", b)
	}
	old := &mcp.InitializeResult{ProtocolVersion: "2025-06-18"}
	if WithCapability(old, true) != mcp.Result(old) {
		t.Error("tasks offered at 2025-06-18")
	}
}

func TestDecodeExtensionCall(t *testing.T) {
	for in, want := range map[string]bool{
		`{"name":"a","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}`:   true,
		`{"name":"a","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{}}}}`:                                     false,
		`{"name":"a","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":null}}}}`: false,
		`{"name":"a"}`: false,
	} {
		p, ok, err := DecodeExtensionCall(json.RawMessage(in))
		if err != nil || ok != want || ok && (p.Task == nil || p.MetaMap == nil) {
			t.Errorf("DecodeExtensionCall(%s) = %+v, %v, %v", in, p, ok, err)
		}
	}
}

func FuzzDecodeExtensionCall(f *testing.F) {
	f.Add([]byte(`{"name":"a","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"progressToken":1}}`))
	f.Add([]byte(`{"name":"a","_meta":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok, err := DecodeExtensionCall(b)
		if ok && (err != nil || p.Name == "" || p.Task == nil || p.MetaMap["progressToken"] != nil) {
			t.Fatalf("%q: %+v %v", b, p, err)
		}
	})
}

func TestDropRelatedTask(t *testing.T) {
	for in, want := range map[string]string{
		`{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"up-1"}}}`:       `{"content":[]}`,
		`{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"up-1"},"k":1}}`: `{"_meta":{"k":1},"content":[]}`,
		`{"content":[]}`: `{"content":[]}`,
		`not json`:       `not json`,
	} {
		if got := string(dropRelatedTask(json.RawMessage(in))); got != want {
			t.Errorf("dropRelatedTask(%s) = %s, want %s", in, got, want)
		}
	}
}
