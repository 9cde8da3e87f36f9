package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/listener"
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
		// Protocol 2026-07-28 has no Tool.execution (catalog.ToolsAnswer).
		if b, _ := json.Marshal(fast.msg); tc.method == "tools/list" && bytes.Contains(b, []byte(`"execution"`)) {
			t.Errorf("%s: a 2026-07-28 listing with execution: %s", tc.name, b)
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

// TestRoundRetryOnAnotherHost: two hosts with one RoundStateKey (replicas
// sharing a store), each with its own upstream. A call whose upstream asks
// the client's LLM answers input_required on the first; its retry, sent to
// the second, runs the call again there with the client's answer and
// finishes. On each host a state serves one retry; a state is another
// identity's on neither; a host with another key refuses it.
func TestRoundRetryOnAnotherHost(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	cfg := Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{stdioServer("a")}}
	a := startHost(t, cfg, &Options{RoundStateKey: key})
	b := startHost(t, cfg, &Options{RoundStateKey: key})
	other := startHost(t, cfg, nil)
	ctx := context.Background()
	manual := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	connect := func(h *Host, token string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "replay"}, manual).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: httptestServer(t, h) + "/mcp", HTTPClient: authClient(token)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	args := map[string]any{"text": "where"}
	first, err := connect(a, "alice-key-0123456789").CallTool(ctx, &mcp.CallToolParams{Name: "a__sample", Arguments: args})
	if err != nil || !first.NeedsInput() || len(first.InputRequests) != 1 {
		t.Fatalf("the first round answered %v %+v, want input_required", err, first)
	}
	answers := mcp.InputResponseMap{}
	for id := range first.InputRequests {
		answers[id] = &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", Content: []mcp.Content{&mcp.TextContent{Text: "by hand"}}}
	}
	retry := func(h *Host, token string, args map[string]any) (*mcp.CallToolResult, error) {
		return connect(h, token).CallTool(ctx, &mcp.CallToolParams{Name: "a__sample", Arguments: args, InputResponses: answers, RequestState: first.RequestState})
	}
	if _, err := retry(b, "bob-key-0123456789", args); err == nil || !strings.Contains(err.Error(), "unknown or expired requestState") {
		t.Errorf("bob's retry of alice's call on the second host: %v", err)
	}
	if _, err := retry(other, "alice-key-0123456789", args); err == nil || !strings.Contains(err.Error(), "unknown or expired requestState") {
		t.Errorf("a retry on a host with another key: %v", err)
	}
	if _, err := retry(b, "alice-key-0123456789", map[string]any{"text": "elsewhere"}); err == nil || !strings.Contains(err.Error(), "unknown or expired requestState") {
		t.Errorf("a retry with other arguments: %v", err)
	}
	for _, h := range []*Host{b, a} { // b runs the call again; a has it waiting
		res, err := retry(h, "alice-key-0123456789", args)
		if err != nil || res.NeedsInput() || res.IsError || !strings.Contains(text(t, res), "by hand") {
			t.Fatalf("alice's retry: %v %+v", err, res)
		}
		if _, err := retry(h, "alice-key-0123456789", args); err == nil {
			t.Error("a requestState served twice by one host")
		}
	}
}

// TestSessionlessLogs: an upstream's log messages during a 2026-07-28
// request reach it as the revision has them: on the request's own
// response stream, ahead of the result, only when its _meta asks for a log
// level, and only at or above that level.
func TestSessionlessLogs(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	url := httptestServer(t, h) + "/mcp"
	post := func(level string) []string {
		t.Helper()
		m := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}` + level + `}`
		tc := sessionlessCase{name: "log " + level, method: "tools/call", toolName: "a__log",
			body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__log","arguments":{"text":"hello-log"},` + m + `}}`}
		req, _ := http.NewRequest("POST", url, strings.NewReader(tc.body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": tc.method, "Mcp-Name": tc.toolName} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var msgs []string
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				msgs = append(msgs, d)
			} else if strings.HasPrefix(line, "{") {
				msgs = append(msgs, line)
			}
		}
		if len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1], `"result"`) {
			t.Fatalf("%s: answered %s", tc.name, b)
		}
		return msgs
	}
	msgs := post(`,"io.modelcontextprotocol/logLevel":"info"`)
	if len(msgs) != 2 || !strings.Contains(msgs[0], `"notifications/message"`) || !strings.Contains(msgs[0], "hello-log") {
		t.Errorf("with logLevel info: %q, want the log message, then the result", msgs)
	}
	for _, level := range []string{"", `,"io.modelcontextprotocol/logLevel":"error"`} {
		if msgs := post(level); len(msgs) != 1 {
			t.Errorf("with %q: %q, want the result alone", level, msgs)
		}
	}
}
