package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// fastCallBodies are tools/call requests the shortcut takes, covering the
// result paths: the upstream's bytes, typed results (a block the ABI does
// not carry, an upstream failure), JSON-RPC errors, and ids and arguments
// that a lax reading could change.
var fastCallBodies = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"plain"}}}`,
	`{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"name":"a__echo","arguments":{"text":"<&> \u00e9 \/ \ud83d\ude00"}}}`,
	`{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"arguments":{"text":"k"},"name":"a__structured_key"}}`,
	`{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/call","params":{"name":"a__meta","arguments":{"text":"m"},"_meta":{"trace":"x"}}}`,
	`{ "method" : "tools/call" , "params" : { "name" : "a__nested" , "arguments" : { "text" : "n" } } , "id" : 4 , "jsonrpc" : "2.0" }`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a__tool_error","arguments":{"text":"bad"}}}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a__rpc_error","arguments":{"text":"rpc"}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__resource_link","arguments":{"text":"x"}}}`,
	`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"a__embedded","arguments":{"text":"e"}}}`,
	`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"a__pid"}}`,
	`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"a__pid","arguments":null}}`,
	`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"no__such_tool","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"` + "\xff" + `"}}}`,
	`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"my secret"}}}`,
}

// The shortcut's answer is, byte for byte, the message the go-sdk sends
// for the same request, with no policy, and with a result policy that
// keeps most results and rewrites the one that mentions a secret.
func TestFastCallAnswersAsTheGoSDKDoes(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *Options
	}{
		{"no policy", nil},
		{"a result policy", &Options{Policy: maskPolicy{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, tc.opts)
			_, s := connectAs(t, httptestServer(t, h)+"/mcp", "c")
			for _, body := range fastCallBodies {
				fast, shortcut := responseData(t, s.post(body, nil))
				if !shortcut {
					t.Fatalf("%s: not answered by the shortcut", body)
				}
				// Without the version header the request goes to the go-sdk.
				slow, shortcut := responseData(t, s.post(body, func(r *http.Request) { r.Header.Del("Mcp-Protocol-Version") }))
				if shortcut {
					t.Fatalf("%s: the go-sdk's path took the shortcut", body)
				}
				if !bytes.Equal(fast, slow) {
					t.Errorf("%s:\nshortcut %s\ngo-sdk   %s", body, fast, slow)
				}
			}
		})
	}
}

// Every request that is not a plain tools/call goes to the go-sdk, which
// answers it on an event stream as it always did.
func TestFastCallLeavesTheRestToTheGoSDK(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	_, s := connectAs(t, httptestServer(t, h)+"/mcp", "c")
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
	}
	for _, tc := range []struct {
		name string
		body string
		sse  bool // answered with 200 and an event stream; else an HTTP error
	}{
		{"a progress token", call(`{"name":"a__echo","arguments":{"text":"x"},"_meta":{"progressToken":"p"}}`), true},
		{"the 2026-07-28 version key", call(`{"name":"a__echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`), false},
		{"a null _meta", call(`{"name":"a__echo","_meta":null}`), true},
		{"arguments that are not an object", call(`{"name":"a__echo","arguments":["x"]}`), true},
		{"an unknown member of params", call(`{"name":"a__echo","extra":{"ttl":1}}`), true},
		{"a member of params in another case", call(`{"Name":"a__echo","name":"a__echo"}`), true},
		{"a repeated name", call(`{"name":"a__echo","name":"a__pid"}`), true},
		{"an empty name", call(`{"name":""}`), true},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, false},
		{"an escaped id", `{"jsonrpc":"2.0","id":"r\u0031","method":"tools/call","params":{"name":"a__pid"}}`, true},
		{"an escaped tool name", call(`{"name":"a__\u0070id"}`), true},
		{"an escaped member name", call(`{"n\u0061me":"a__pid"}`), true},
		{"an id past 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"a__pid"}}`, true},
		{"nesting deeper than the go-sdk reads", call(`{"name":"a__echo","arguments":{"x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`), false},
		{"a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a__pid"}}`, false},
		{"a batch", `[` + call(`{"name":"a__pid"}`) + `]`, false},
		{"trailing data", call(`{"name":"a__pid"}`) + `{}`, false},
		{"another jsonrpc version", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a__pid"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.post(tc.body, nil)
			ct := resp.Header.Get("Content-Type")
			if resp.StatusCode == http.StatusOK && ct == "application/json" {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("answered by the shortcut: %s", b)
			}
			if tc.sse && (resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream")) {
				t.Errorf("status %d, %q: want the go-sdk's event stream", resp.StatusCode, ct)
			}
		})
	}
	// A POST with Last-Event-ID, which the go-sdk refuses.
	if resp := s.post(call(`{"name":"a__pid"}`), func(r *http.Request) { r.Header.Set("Last-Event-ID", "1") }); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a POST with Last-Event-ID: status %d, want the go-sdk's 400", resp.StatusCode)
	}
	// A body longer than the shortcut reads goes to the go-sdk whole.
	long := strings.Repeat("x", maxFastCallBody)
	data, shortcut := responseData(t, s.post(call(`{"name":"a__echo","arguments":{"text":"`+long+`"}}`), nil))
	if shortcut || !bytes.Contains(data, []byte(long)) {
		t.Errorf("a %d-byte call: shortcut %v, answer of %d bytes", maxFastCallBody, shortcut, len(data))
	}
}

// A call the shortcut answers ends early when the client cancels it
// (notifications/cancelled naming its id) or closes the session, as a
// call through the go-sdk does.
func TestFastCallCancellation(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	url := httptestServer(t, h) + "/mcp"
	sleep := func(s rawSession, id string) <-chan []byte {
		out := make(chan []byte, 1)
		go func() {
			body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"a__sleep","arguments":{"millis":30000}}}`
			data, shortcut := responseData(t, s.post(body, nil))
			if !shortcut {
				t.Error("the sleep call did not take the shortcut")
			}
			out <- data
		}()
		return out
	}
	inFlight := func(s rawSession) {
		t.Helper()
		testproc.WaitFor(t, "the call to be in flight", 10*time.Second, func() bool {
			e := h.fastSessions.lookup(s.id)
			if e == nil {
				return false
			}
			e.calls.mu.Lock()
			defer e.calls.mu.Unlock()
			return len(e.calls.m) == 1
		})
	}

	_, s := connectAs(t, url, "c")
	for _, id := range []string{`41`, `"forty-two"`} {
		done := sleep(s, id)
		inFlight(s)
		if resp := s.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":"changed my mind"}}`, nil); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: status %d", resp.StatusCode)
		}
		select {
		case data := <-done:
			if !bytes.Contains(data, []byte("call cancelled")) {
				t.Errorf("cancelled call %s answered %s", id, data)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("call %s went on after notifications/cancelled", id)
		}
	}

	// Closing the session ends its calls.
	cs, s2 := connectAs(t, url, "d")
	done := sleep(s2, `1`)
	inFlight(s2)
	cs.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a call went on after its session closed")
	}
}

// A go-sdk client's calls take the shortcut, and what upstreams ask the
// client during a call (sampling, elicitation, roots) still reaches it, on
// the session's standalone stream.
func TestFastCallKeepsServerRequests(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a", "-secrets")}}, nil)
	url := httptestServer(t, h) + "/mcp"
	var c samplingClient
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, c.options())
	client.AddRoots(&mcp.Root{URI: "file:///work/one"})
	rec := &answerTypes{}
	pinned := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"} // sessions; 2026-07-28 has none
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}}, pinned)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"a__sample", map[string]any{"text": "hi"}, "echo: hi"},
		{"a__elicit", map[string]any{"text": "who?"}, "accept"},
		{"a__ask_roots", nil, "file:///work/one"},
		{"a__echo", map[string]any{"text": "x"}, "x"},
	} {
		got, isErr := callText(t, cs, tc.tool, tc.args)
		if isErr || !strings.Contains(got, tc.want) {
			t.Errorf("%s = %q (isError %v), want %q", tc.tool, got, isErr, tc.want)
		}
	}
	if n := rec.count("application/json"); n != 4 {
		t.Errorf("%d of the 4 calls took the shortcut (%v)", n, rec.seen())
	}

	// A client without a standalone stream is asked on the call's own
	// stream: the go-sdk's path.
	rec2 := &answerTypes{}
	cs2, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec2}, DisableStandaloneSSE: true}, pinned)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs2.Close() })
	if err := cs2.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got, isErr := callText(t, cs2, "a__sample", map[string]any{"text": "no stream"}); isErr || got != "echo: no stream" {
		t.Errorf("sampling without a standalone stream = %q (isError %v)", got, isErr)
	}
	if n := rec2.count("application/json"); n != 0 {
		t.Errorf("a client without a standalone stream got %d shortcut answers", n)
	}

	// Once the client sets a logging level, an upstream's log goes out
	// ahead of the call's answer, on its stream: the go-sdk's path.
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got, isErr := callText(t, cs, "a__log", map[string]any{"text": "note"}); isErr || got != "logged" {
		t.Errorf("log = %q", got)
	}
	testproc.WaitFor(t, "the log message", 10*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.logs) == 1 && c.logs[0] == "note"
	})
	if n := rec.count("application/json"); n != 4 {
		t.Errorf("a session with a logging level took the shortcut (%v)", rec.seen())
	}
}

// answerTypes records the content type of each tools/call answer.
type answerTypes struct {
	mu sync.Mutex
	ct []string
}

func (c *answerTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	var call bool
	if r.Body != nil && r.Method == http.MethodPost {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		call = bytes.Contains(b, []byte(`"tools/call"`))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && call {
		c.mu.Lock()
		c.ct = append(c.ct, resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, err
}

func (c *answerTypes) count(ct string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.ct {
		if v == ct {
			n++
		}
	}
	return n
}

func (c *answerTypes) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ct...)
}

// FuzzParseFastCall checks that whatever the shortcut accepts is a
// tools/call request as the go-sdk reads it: the same id, tool name,
// arguments and _meta.
func FuzzParseFastCall(f *testing.F) {
	for _, s := range fastCallBodies {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","Name":"y"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"params":{"name":"y"}}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"tools/call","params":{"name":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, ok := wire.ParseToolCall(body)
		if !ok {
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			t.Fatalf("accepted %q, which the go-sdk does not decode: %v", body, err)
		}
		req, isReq := msg.(*jsonrpc.Request)
		if !isReq || req.Method != "tools/call" || !req.IsCall() {
			t.Fatalf("accepted %q, which the go-sdk reads as %#v", body, msg)
		}
		id, err := jsonrpc.MakeID(p.ID)
		if err != nil || id != req.ID {
			t.Fatalf("accepted %q with id %v, the go-sdk reads %v", body, p.ID, req.ID.Raw())
		}
		var params mcp.CallToolParamsRaw
		if _, err := segjson.Parse(req.Params, &params, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
			t.Fatalf("accepted %q, whose params the go-sdk does not decode: %v", body, err)
		}
		if params.Name != p.Name {
			t.Fatalf("accepted %q as tool %q, the go-sdk reads %q", body, p.Name, params.Name)
		}
		if !jsonEqual(params.Arguments, p.Args) {
			t.Fatalf("accepted %q with arguments %s, the go-sdk reads %s", body, p.Args, params.Arguments)
		}
		var meta mcp.Meta
		if p.Meta != nil {
			if meta, ok = wire.CallMeta(p.Meta); !ok {
				return // refused there
			}
		}
		if len(meta) != len(params.Meta) || (len(meta) > 0 && !reflect.DeepEqual(meta, params.Meta)) {
			t.Fatalf("accepted %q with _meta %v, the go-sdk reads %v", body, meta, params.Meta)
		}
	})
}

// jsonEqual reports whether a and b are the same JSON value (both absent
// counts as equal).
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func BenchmarkParseFastCall(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"everything__test_simple_text","arguments":{}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := wire.ParseToolCall(body); !ok {
			b.Fatal("refused")
		}
	}
}

// A call that could outlive the go-sdk's idle timer of its session (which
// only the go-sdk's own requests hold) goes the go-sdk's way, and is not
// cut when the timer would have fired.
func TestFastCallLeavesLongCallsToTheGoSDK(t *testing.T) {
	up := stdioServer("a")
	up.Timeout = 10 * time.Second
	h := startHost(t, Config{Listen: listener.Config{SessionTimeout: 2 * time.Second}, Servers: []upstream.ServerConfig{up}}, nil)
	_, s := connectAs(t, httptestServer(t, h)+"/mcp", "c")
	data, shortcut := responseData(t, s.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__sleep","arguments":{"millis":3000}}}`, nil))
	if shortcut || !bytes.Contains(data, []byte("slept")) {
		t.Errorf("a 3s call on a session that idles out after 2s: shortcut %v, answer %s", shortcut, data)
	}
}
