package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// callerPolicy is a native Go policy whose listing depends on the caller:
// it hides echo from every client but "alice" and titles each tool with the
// caller's session, so a view served to the wrong caller shows.
type callerPolicy struct{ ToolsOnly }

func (callerPolicy) ToolsList(_ context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	var out []abi.Tool
	for _, t := range in.Tools {
		if t.Tool == "echo" && in.Caller.ClientName != "alice" {
			continue
		}
		t.Title = in.Caller.ClientName + "@" + in.Caller.SessionID
		out = append(out, t)
	}
	return out, nil
}

func (callerPolicy) ToolCall(context.Context, *abi.ToolCallInput) (*abi.CallDecision, error) {
	return &abi.CallDecision{Action: abi.ActionAllow}, nil
}

func (callerPolicy) ToolResult(_ context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	return in.Result, nil
}

func (callerPolicy) Generation() uint64 { return 1 }

// rawSession posts JSON-RPC bodies on the session of a connected go-sdk
// client, as any streamable HTTP client would.
type rawSession struct {
	t       *testing.T
	url     string
	id      string
	version string
}

func (s rawSession) post(body string, edit func(*http.Request)) *http.Response {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", s.version)
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// message reads the JSON-RPC response of resp, from a JSON body (the
// shortcut) or the first data line of an event stream (the go-sdk).
func message(t *testing.T, resp *http.Response) (msg struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
}, shortcut bool) {
	t.Helper()
	data, shortcut := responseData(t, resp)
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatalf("response %q: %v", data, err)
	}
	return msg, shortcut
}

// responseData returns the JSON-RPC message of resp as sent: a JSON body
// (a shortcut's; its final newline removed) or the first data line of an
// event stream (the go-sdk's).
func responseData(t *testing.T, resp *http.Response) (data []byte, shortcut bool) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case ct == "application/json":
		shortcut = true
		data, _ = io.ReadAll(resp.Body)
		data = bytes.TrimSuffix(data, []byte("\n"))
	case strings.HasPrefix(ct, "text/event-stream"):
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = []byte(d)
				break
			}
		}
	default:
		t.Fatalf("content type %q", ct)
	}
	return data, shortcut
}

func connectAs(t *testing.T, url, name string) (*mcp.ClientSession, rawSession) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	// The session is eligible once the middleware saw it initialised;
	// a request through the go-sdk makes sure that happened.
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return cs, rawSession{t: t, url: url, id: cs.ID(), version: cs.InitializeResult().ProtocolVersion}
}

// The shortcut answers what the go-sdk path answers, for each caller.
func TestFastListAnswersAsTheGoSDKDoes(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a"), stdioServer("b")}}, &Options{Policy: callerPolicy{}})
	url := httptestServer(t, h) + "/mcp"
	results := map[string]json.RawMessage{}
	for _, name := range []string{"alice", "bob"} {
		cs, s := connectAs(t, url, name)
		for _, id := range []string{`7`, `"req-1"`, `-3`} {
			fast, shortcut := message(t, s.post(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`, nil))
			if !shortcut {
				t.Fatalf("%s: a plain tools/list did not take the shortcut", name)
			}
			if string(fast.ID) != id {
				t.Errorf("%s: id %s echoed as %s", name, id, fast.ID)
			}
			// The same request without the version header goes through
			// the go-sdk.
			slow, shortcut := message(t, s.post(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`, func(r *http.Request) {
				r.Header.Del("Mcp-Protocol-Version")
			}))
			if shortcut {
				t.Fatal("a request without Mcp-Protocol-Version took the shortcut")
			}
			var a, b any
			if err := json.Unmarshal(fast.Result, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(slow.Result, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: the shortcut answered\n%s\nthe go-sdk\n%s", name, fast.Result, slow.Result)
			}
			results[name] = fast.Result
			// Both list each tool's execution, which the go-sdk's types
			// lack: "optional", as mcphost runs these servers' tasks.
			var l struct {
				Tools []struct{ Name, Execution json.RawMessage }
			}
			if err := json.Unmarshal(fast.Result, &l); err != nil || len(l.Tools) == 0 {
				t.Fatalf("%s: %s, %v", name, fast.Result, err)
			}
			for _, tool := range l.Tools {
				if string(tool.Execution) != `{"taskSupport":"optional"}` {
					t.Errorf("%s: tool %s lists execution %s", name, tool.Name, tool.Execution)
				}
			}
		}
		// And a go-sdk client reads it like any answer.
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := name + "@" + cs.ID()
		for _, tool := range res.Tools {
			if tool.Title != want {
				t.Errorf("%s: tool %s titled %q, want %q", name, tool.Name, tool.Title, want)
			}
		}
	}
	if !bytes.Contains(results["alice"], []byte(`"a__echo"`)) || bytes.Contains(results["bob"], []byte(`"a__echo"`)) {
		t.Errorf("alice and bob did not get their own views:\nalice %s\nbob %s", results["alice"], results["bob"])
	}
}

// Every request that is not a plain tools/list of an established session
// goes to the go-sdk, which answers it as it always did.
func TestFastListLeavesTheRestToTheGoSDK(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	url := httptestServer(t, h) + "/mcp"
	_, s := connectAs(t, url, "c")
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, tc := range []struct {
		name   string
		body   string
		edit   func(*http.Request)
		status int // 0: 200 with an event stream
	}{
		{"a cursor", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`, nil, 0},
		{"_meta and a cursor", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1},"cursor":"x"}}`, nil, 0},
		{"a _meta that is not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":[1]}}`, nil, 0},
		{"another method", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, 0},
		{"a repeated member", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"ping"}`, nil, 0},
		{"a member in another case", `{"jsonrpc":"2.0","id":1,"Method":"tools/list","method":"tools/list"}`, nil, 0},
		{"an unknown member", `{"jsonrpc":"2.0","id":1,"method":"tools/list","x":1}`, nil, 0},
		{"a batch", `[` + list + `]`, nil, -1},
		{"a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, nil, -1},
		{"a null id", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, nil, -1},
		{"no id (a notification)", `{"jsonrpc":"2.0","method":"tools/list"}`, nil, -1},
		{"trailing data", list + `{}`, nil, -1},
		{"a long body", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}` + strings.Repeat(" ", 2000), nil, 0},
		{"an unknown session", list, func(r *http.Request) { r.Header.Set("Mcp-Session-Id", "nope") }, http.StatusNotFound},
		{"another protocol version", list, func(r *http.Request) { r.Header.Set("Mcp-Protocol-Version", "2025-06-18") }, 0},
		{"an event stream only", list, func(r *http.Request) { r.Header.Set("Accept", "text/event-stream") }, http.StatusBadRequest},
		{"JSON only", list, func(r *http.Request) { r.Header.Set("Accept", "application/json") }, http.StatusBadRequest},
		{"a malformed content type", list, func(r *http.Request) { r.Header.Set("Content-Type", "application/json; =x") }, http.StatusUnsupportedMediaType},
		{"a foreign Host", list, func(r *http.Request) { r.Host = "evil.example.com" }, http.StatusForbidden},
		{"another content type", list, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.post(tc.body, tc.edit)
			ct := resp.Header.Get("Content-Type")
			if ct == "application/json" {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("answered by the shortcut: %d %s", resp.StatusCode, b)
			}
			switch {
			case tc.status == 0 && (resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream")):
				t.Errorf("status %d, %q: want the go-sdk's event stream", resp.StatusCode, ct)
			case tc.status > 0 && resp.StatusCode != tc.status:
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

// A session the client closed, or one the middleware never saw finish its
// initialisation, is not served.
func TestFastListOnlyServesLiveInitialisedSessions(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	cs, s := connectAs(t, url, "c")
	if _, shortcut := message(t, s.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)); !shortcut {
		t.Fatal("no shortcut for a live session")
	}
	cs.Close()
	testproc.WaitFor(t, "the session to be forgotten", 10*time.Second, func() bool { return h.fastSessions.lookup(s.id) == nil })
	if resp := s.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("closed session: status %d, want the go-sdk's 404", resp.StatusCode)
	}

	// A session that sent initialize but not notifications/initialized.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	resp := rawSession{t: t, url: url}.post(init, func(r *http.Request) {
		r.Header.Del("Mcp-Session-Id")
		r.Header.Del("Mcp-Protocol-Version")
	})
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatalf("initialize: status %d, no session id", resp.StatusCode)
	}
	half := rawSession{t: t, url: url, id: id, version: "2025-11-25"}
	if resp := half.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil); resp.Header.Get("Content-Type") == "application/json" {
		t.Error("a session that never sent notifications/initialized took the shortcut")
	}
}

func TestParseFastList(t *testing.T) {
	for _, tc := range []struct {
		body string
		id   string // "" when refused
		meta string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `1`, ``},
		{` {"method":"tools/list","id":"x","jsonrpc":"2.0","params":{}} `, `"x"`, ``},
		{`{"jsonrpc":"2.0","id":"a\"b","method":"tools/list","params":null}`, `"a\"b"`, ``},
		{`{"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/list"}`, `9223372036854775807`, ``},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"progressToken":"p","k":[1,{"a":null}]}}}`, `2`, `{"progressToken":"p","k":[1,{"a":null}]}`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":null}}`, `2`, ``},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{}}}`, `2`, `{}`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":null,"_meta":{}}}`, ``, ``},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{},"_meta":{}}}`, ``, ``},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_Meta":{}}}`, ``, ``},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":"x"}}`, ``, ``},
		{`{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/list"}`, ``, ``},
		{`{"jsonrpc":"2.0","id":1e3,"method":"tools/list"}`, ``, ``},
		{`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, ``, ``},
		{`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, ``, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}`, ``, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":null}}`, ``, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"`, ``, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"} x`, ``, ``},
		{``, ``, ``},
	} {
		id, meta, ok := wire.ParseToolsList([]byte(tc.body))
		if ok != (tc.id != "") || string(id) != tc.id || string(meta) != tc.meta {
			t.Errorf("%s: got %q, %q, %v; want %q, %q", tc.body, id, meta, ok, tc.id, tc.meta)
		}
	}
}

// metaPolicy titles every tool with the caller's _meta and counts its
// listings, so a view served for the wrong _meta, or computed again,
// shows.
type metaPolicy struct {
	ToolsOnly
	lists *atomic.Int64
}

func (p metaPolicy) ToolsList(_ context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	p.lists.Add(1)
	out := append([]abi.Tool(nil), in.Tools...)
	for i := range out {
		out[i].Title = "meta " + string(in.Caller.Meta)
	}
	return out, nil
}

func (metaPolicy) ToolCall(context.Context, *abi.ToolCallInput) (*abi.CallDecision, error) {
	return &abi.CallDecision{Action: abi.ActionAllow}, nil
}

func (metaPolicy) ToolResult(_ context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	return in.Result, nil
}

func (metaPolicy) Generation() uint64 { return 1 }

// A tools/list with its own _meta is served from the cached listing, with
// the bytes the go-sdk's handler answers for the same request, and the
// policies run once per distinct _meta (the progress token aside).
func TestFastListWithMeta(t *testing.T) {
	var lists atomic.Int64
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, &Options{Policy: metaPolicy{lists: &lists}})
	url := httptestServer(t, h) + "/mcp"
	_, s := connectAs(t, url, "c")
	for i, meta := range []string{`{"trace":"t1"}`, `{"progressToken":5,"trace":"t1"}`, `{"progressToken":"x","trace":"t1"}`, `{"trace":"t2","n":1.50}`, `{}`, `null`} {
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/list","params":{"_meta":` + meta + `}}`
		fast, shortcut := message(t, s.post(body, nil))
		if !shortcut {
			t.Fatalf("%s: a tools/list with _meta did not take the shortcut", meta)
		}
		slow, shortcut := message(t, s.post(body, func(r *http.Request) { r.Header.Del("Mcp-Protocol-Version") }))
		if shortcut {
			t.Fatal("a request without Mcp-Protocol-Version took the shortcut")
		}
		if !bytes.Equal(fast.Result, slow.Result) {
			t.Fatalf("_meta %s: the shortcut answered\n%s\nthe go-sdk\n%s", meta, fast.Result, slow.Result)
		}
	}
	// Views: {"trace":"t1"} (three requests), {"trace":"t2","n":1.5},
	// and no meta ({} and null).
	if n := lists.Load(); n != 3 {
		t.Errorf("the policy listed %d times, want 3 (once per distinct _meta)", n)
	}
}

// FuzzParseFastList checks that whatever the shortcut accepts is a
// tools/list request as encoding/json reads it, with the id it echoes.
func FuzzParseFastList(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1,"a":"b"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, meta, ok := wire.ParseToolsList(body)
		if !ok {
			return
		}
		var req struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  *struct {
				Cursor *string        `json:"cursor"`
				Meta   map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("accepted %q, which does not decode: %v", body, err)
		}
		if req.JSONRPC != "2.0" || req.Method != "tools/list" || !bytes.Equal(req.ID, id) {
			t.Fatalf("accepted %q as id %s", body, id)
		}
		if req.Params != nil && req.Params.Cursor != nil {
			t.Fatalf("accepted %q with a cursor", body)
		}
		if req.Params != nil && req.Params.Meta != nil {
			var m map[string]any
			if err := json.Unmarshal(meta, &m); err != nil || !reflect.DeepEqual(m, req.Params.Meta) {
				t.Fatalf("accepted %q with _meta %q", body, meta)
			}
		}
		if !json.Valid(id) {
			t.Fatalf("id %q is not JSON", id)
		}
	})
}

// TestShortcutsOff: with Options.NoShortcuts, tools/list and tools/call go
// the go-sdk's typed way only, and clients get the same answers as with
// the shortcuts (the cached listing written straight to HTTP, results as
// the upstream's bytes): the same JSON values; key order may differ.
func TestShortcutsOff(t *testing.T) {
	answers := map[bool][]json.RawMessage{}
	for _, off := range []bool{false, true} {
		h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, &Options{NoShortcuts: off})
		_, s := connectAs(t, httptestServer(t, h)+"/mcp", "client")
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"same <&> \u00e9"}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__structured_key","arguments":{"text":"k"}}}`,
		} {
			msg, shortcut := message(t, s.post(body, nil))
			if off && shortcut {
				t.Fatalf("%s took the listing shortcut with NoShortcuts", body)
			}
			answers[off] = append(answers[off], msg.Result)
		}
		if !off && len(answers[off]) > 0 {
			if _, shortcut := message(t, s.post(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, nil)); !shortcut {
				t.Fatal("the listing shortcut is not taken by default")
			}
		}
	}
	for i := range answers[false] {
		var a, b any
		if err := json.Unmarshal(answers[false][i], &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(answers[true][i], &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("answer %d differs:\nshortcuts %s\ntyped     %s", i+1, answers[false][i], answers[true][i])
		}
	}
}
