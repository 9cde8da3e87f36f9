package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/host/upstream"
)

// sessionlessMeta is the _meta of a go-sdk client of protocol 2026-07-28.
const sessionlessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}`

// sessionlessCase is one request of a 2026-07-28 client, without a session.
type sessionlessCase struct {
	name     string
	method   string // Mcp-Method
	toolName string // Mcp-Name ("" for none)
	body     string
	shortcut bool // whether the shortcut takes it
	header   map[string]string
}

var sessionlessCases = []sessionlessCase{
	{name: "echo", method: "tools/call", toolName: "a__echo", shortcut: true,
		body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"same <&> \u00e9"},` + sessionlessMeta + `}}`},
	{name: "string id, the upstream's own _meta", method: "tools/call", toolName: "a__meta", shortcut: true,
		body: `{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"a__meta","arguments":{"text":"t"},` + sessionlessMeta + `}}`},
	{name: "structured", method: "tools/call", toolName: "a__structured_key", shortcut: true,
		body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__structured_key","arguments":{"text":"k"},` + sessionlessMeta + `}}`},
	{name: "tool error", method: "tools/call", toolName: "a__tool_error", shortcut: true,
		body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a__tool_error","arguments":{"text":"failed"},` + sessionlessMeta + `}}`},
	{name: "unknown tool: 400", method: "tools/call", toolName: "a__nope", shortcut: true,
		body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a__nope",` + sessionlessMeta + `}}`},
	{name: "no client info", method: "tools/call", toolName: "a__echo", shortcut: true,
		body: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
	{name: "list", method: "tools/list", shortcut: true,
		body: `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{` + sessionlessMeta + `}}`},
	// Left to the go-sdk.
	{name: "log level", method: "tools/call", toolName: "a__echo",
		body: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
	{name: "progress token", method: "tools/call", toolName: "a__echo",
		body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"x"},"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
	{name: "no capabilities: 400", method: "tools/call", toolName: "a__echo",
		body: `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"a__echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
	{name: "capabilities not an object: 400", method: "tools/call", toolName: "a__echo",
		body: `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"a__echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":"all"}}}`},
	{name: "Mcp-Name of another tool", method: "tools/call", toolName: "a__meta",
		body: `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"a__echo",` + sessionlessMeta + `}}`},
	{name: "an Mcp-Param header", method: "tools/call", toolName: "a__echo", header: map[string]string{"Mcp-Param-Text": "x"},
		body: `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"x"},` + sessionlessMeta + `}}`},
	{name: "list with a cursor", method: "tools/list",
		body: `{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{"cursor":"x",` + sessionlessMeta + `}}`},
}

// TestSessionlessShortcut: the plain tools/call and tools/list requests of
// a 2026-07-28 client are answered by the shortcut, with the JSON-RPC
// message and HTTP status the go-sdk's stateless handler gives (the same
// host with NoShortcuts), and every other request is left to the go-sdk.
func TestSessionlessShortcut(t *testing.T) {
	type answer struct {
		status   int
		msg      any
		shortcut bool
	}
	answers := map[bool][]answer{}
	for _, off := range []bool{false, true} {
		h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, &Options{NoShortcuts: off})
		url := httptestServer(t, h) + "/mcp"
		for _, tc := range sessionlessCases {
			status, data, json1 := postSessionless(t, url, tc)
			var msg any
			if err := json.Unmarshal(data, &msg); err != nil {
				t.Fatalf("%s: %q: %v", tc.name, data, err)
			}
			answers[off] = append(answers[off], answer{status, msg, json1})
		}
		if n := rawCallsMade(t, h, "a"); off && n != 0 {
			t.Errorf("NoShortcuts: %d raw calls", n)
		}
	}
	for i, tc := range sessionlessCases {
		fast, sdk := answers[false][i], answers[true][i]
		// (Both answer an error with a status other than 200 in JSON.)
		if fast.status == http.StatusOK && fast.shortcut != tc.shortcut || sdk.shortcut {
			t.Errorf("%s: answered by the shortcut: %v, want %v (NoShortcuts: %v)", tc.name, fast.shortcut, tc.shortcut, sdk.shortcut)
		}
		if fast.status != sdk.status || !reflect.DeepEqual(fast.msg, sdk.msg) {
			t.Errorf("%s:\nshortcut %d %v\ngo-sdk   %d %v", tc.name, fast.status, fast.msg, sdk.status, sdk.msg)
		}
	}
}

// postSessionless posts tc without a session and returns the HTTP status,
// the JSON-RPC message, and whether it came as a JSON body (the shortcut;
// the go-sdk's stateless handler answers a call on an event stream and an
// error that sets the status as JSON too, so the status tells those apart).
func postSessionless(t *testing.T, url string, tc sessionlessCase) (int, []byte, bool) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", tc.method)
	if tc.toolName != "" {
		req.Header.Set("Mcp-Name", tc.toolName)
	}
	for k, v := range tc.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return resp.StatusCode, []byte(d), false
			}
		}
		t.Fatalf("%s: an event stream without data", tc.name)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, bytes.TrimSpace(b), resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == "application/json"
}
