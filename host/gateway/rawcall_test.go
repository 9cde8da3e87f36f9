package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// connectHTTPAt is connectHTTP for a client asking for protocol version
// (the go-sdk's default when empty).
func connectHTTPAt(t *testing.T, h *Host, version string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: httptestServer(t, h) + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// rawCallsMade counts the raw calls made on server's shared session.
func rawCallsMade(t *testing.T, h *Host, server string) uint64 {
	t.Helper()
	u := h.upstreamNamed(server)
	c := u.RawConn(u.LiveSession())
	if c == nil {
		return 0
	}
	return c.Raw.Next.Load()
}

// A client at 2025-11-25 gets its results from stdio and SSE upstreams as
// the servers sent them (raw calls), and they read as the typed results of
// the Go API (Host.CallTool, through the go-sdk's client) read.
func TestRawCallsAnswerAsTypedCalls(t *testing.T) {
	addr := testproc.FreeAddr(t)
	startProcess(t, addr, upstreamBin, "-http="+addr, "-sse", "-name", "s")
	h := startHost(t, Config{Servers: []upstream.ServerConfig{
		stdioServer("a"),
		{Name: "s", Transport: upstream.TransportSSE, URL: "http://" + addr},
	}}, nil)
	cs := connectHTTPAt(t, h, "2025-11-25", nil)
	for _, server := range []string{"a", "s"} {
		for _, call := range []struct {
			tool string
			args string
		}{
			{"echo", `{"text":"héllo \"world\" <&>"}`},
			{"echo", ``},
			{"sleep", `{"millis":1,"steps":1}`},
		} {
			name := server + "__" + call.tool
			before := rawCallsMade(t, h, server)
			want, err := h.CallTool(context.Background(), abi.Caller{}, name, json.RawMessage(call.args))
			if err != nil {
				t.Fatal(err)
			}
			if rawCallsMade(t, h, server) != before {
				t.Fatalf("%s: the Go API made a raw call", name)
			}
			var args map[string]any
			if call.args != "" {
				_ = json.Unmarshal([]byte(call.args), &args)
			}
			got, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			if n := rawCallsMade(t, h, server); n != before+1 {
				t.Fatalf("%s: %d raw calls, want 1", name, n-before)
			}
			if !reflect.DeepEqual(want.Content, got.Content) || want.IsError != got.IsError ||
				!reflect.DeepEqual(want.StructuredContent, got.StructuredContent) {
				w, _ := json.Marshal(want)
				g, _ := json.Marshal(got)
				t.Errorf("%s:\ntyped %s\nraw   %s", name, w, g)
			}
		}
	}
}

// Progress, sampling, cancellation, timeouts and a crash mid-call work on
// raw calls as they do through the go-sdk's client.
func TestRawCallsKeepTheCallsSemantics(t *testing.T) {
	sc := stdioServer("a")
	sc.Timeout = 2 * time.Second
	h := startHost(t, Config{Servers: []upstream.ServerConfig{sc}}, nil)
	var mu sync.Mutex
	var progress []float64
	cs := connectHTTPAt(t, h, "2025-11-25", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, r.Params.Progress)
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := r.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "answer to " + prompt}}, nil
		},
	})
	before := rawCallsMade(t, h, "a")

	params := &mcp.CallToolParams{Name: "a__sleep", Arguments: map[string]any{"millis": 300, "steps": 3}}
	params.SetProgressToken("tok")
	if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
		t.Fatalf("sleep: %v %+v", err, res)
	}
	testproc.WaitFor(t, "three progress notifications", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) == 3
	})

	if got, isErr := callText(t, cs, "a__sample", map[string]any{"text": "q"}); isErr || !strings.Contains(got, "answer to q") {
		t.Errorf("sample = %q (isError %v)", got, isErr)
	}

	cancelMidCall(t, h, cs)

	if got, isErr := callText(t, cs, "a__sleep", map[string]any{"millis": 5000}); !isErr || !strings.Contains(got, "timed out after 2s") {
		t.Errorf("a call past the timeout = %q (isError %v)", got, isErr)
	}
	if n := rawCallsMade(t, h, "a") - before; n < 4 {
		t.Fatalf("%d raw calls, want at least 4", n)
	}

	got, isErr := callText(t, cs, "a__crash", nil)
	if !isErr || !strings.Contains(got, `server "a": connection closed during the call`) {
		t.Fatalf("crash = %q (isError %v)", got, isErr)
	}
	testproc.WaitFor(t, "a to reconnect", 10*time.Second, func() bool {
		st := h.Statuses()[0]
		return st.State == upstream.StateConnected && st.Reconnects >= 1
	})
	if got, isErr := callText(t, cs, "a__echo", map[string]any{"text": "back"}); isErr || got != "back" {
		t.Errorf("after the crash echo = %q (isError %v)", got, isErr)
	}
}

func TestCheckToolResult(t *testing.T) {
	for _, tc := range []struct {
		raw string
		ok  bool
	}{
		{`{"content":[{"type":"text","text":"x"}]}`, true},
		{`{"content":[],"isError":true,"structuredContent":{"a":1}}`, true},
		{`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"resource_link","uri":"x:y","name":"n"}]}`, true},
		{`{"content":[{"type":"video"}]}`, false},
		{`{"content":[{"type":"audio","data":"!!"}]}`, false},
		{`{"content":[{"type":"text","text":1}]}`, false},
		{`{"content":[{"type":"tool_use","id":"u","name":"n","input":{}}]}`, true},
		{`{"content":[{"type":"tool_result","toolUseId":"u","content":[{"type":"tool_use"}]}]}`, false},
		{`{"content":[],"resultType":"complete"}`, false},
		{`{"content":[]} {}`, false},
		{`{"content":[{"Type":"text","text":"x"}]}`, false},
		{`{"content":{"type":"text"}}`, false},
		{`[]`, false},
		{`"x"`, false},
		{`{"content":[{"type":"text"}]`, false},
		{``, false},
	} {
		if err := upstream.CheckToolResult(json.RawMessage(tc.raw)); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.raw, err, tc.ok)
		}
	}
}

// FuzzCheckToolResult: a result checkToolResult lets through raw must
// decode with the go-sdk's own CallToolResult decoder, which the typed path
// uses: a raw call never passes on what a typed call would refuse.
func FuzzCheckToolResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"x"}]}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"isError":true}`,
		`{"content":[{"type":"resource","resource":{"uri":"a:b","text":"t"}}],"structuredContent":{"n":1}}`,
		`{"content":[{"type":"audio","data":"!!"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if upstream.CheckToolResult(raw) != nil {
			return
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatalf("passed %q, which the go-sdk refuses: %v", raw, err)
		}
	})
}

// TestRawToolResultMergesMeta: what the go-sdk sets in a raw result's
// _meta (its server info, for 2026-07-28) joins the upstream's own, which
// keeps the keys it set, as in a typed result.
func TestRawToolResultMergesMeta(t *testing.T) {
	r := &wire.RawToolResult{Raw: json.RawMessage(`{"content":[] ,"_meta":{"old":1}}`)}
	if b, _ := json.Marshal(r); string(b) != `{"content":[],"_meta":{"old":1}}` {
		t.Errorf("without _meta set: %s", b)
	}
	r.SetMeta(map[string]any{"old": 2, "new": 3})
	b, err := json.Marshal(r)
	if err != nil || string(b) != `{"_meta":{"new":3,"old":1},"content":[]}` {
		t.Errorf("with _meta set: %s %v", b, err)
	}
	r = &wire.RawToolResult{Raw: json.RawMessage(`{"content":[],"_meta":null}`)}
	r.SetMeta(map[string]any{"new": 3})
	if b, err := json.Marshal(r); err != nil || string(b) != `{"_meta":{"new":3},"content":[]}` {
		t.Errorf("over a null _meta: %s %v", b, err)
	}
}

// maskPolicy replaces results that mention "secret" with a new value, and
// returns the result it was given when it leaves it alone
// (Policy.ToolResult).
type maskPolicy struct{ callerPolicy }

func (maskPolicy) ToolResult(_ context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	for _, c := range in.Result.Content {
		if strings.Contains(c.Text, "secret") {
			out := *in.Result
			out.Content = []abi.Content{{Type: "text", Text: "[masked]"}}
			return &out, nil
		}
	}
	return in.Result, nil
}

func (maskPolicy) ToolsList(_ context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	return in.Tools, nil
}

// With result hooks, a raw call's result reaches policies, and goes
// downstream as sent only when the policy left it unchanged.
func TestRawCallsThroughResultPolicies(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, &Options{Policy: maskPolicy{}})
	cs := connectHTTPAt(t, h, "2025-11-25", nil)
	before := rawCallsMade(t, h, "a")
	if got, _ := callText(t, cs, "a__echo", map[string]any{"text": "plain"}); got != "plain" {
		t.Errorf("plain = %q", got)
	}
	if got, _ := callText(t, cs, "a__echo", map[string]any{"text": "my secret"}); got != "[masked]" {
		t.Errorf("secret = %q, want it masked", got)
	}
	if n := rawCallsMade(t, h, "a") - before; n != 2 {
		t.Errorf("%d raw calls, want 2", n)
	}
	// Text the policy cannot see (nested in a tool_result block) must
	// not go out as the upstream's bytes just because the policy left
	// what it saw unchanged.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__nested", Arguments: map[string]any{"text": "my secret"}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), "my secret") {
		t.Errorf("text the policy never saw went through: %s", b)
	}
}

// Policies read a raw result's members by their exact names, as clients
// do: a "Content" no client shows must not stand in for the "content" one
// does.
func TestRawABIResultMatchesNamesExactly(t *testing.T) {
	res, err := wire.RawABIResult(json.RawMessage(`{"content":[{"type":"text","text":"shown"}],"Content":[{"type":"text","text":"decoy"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "shown" {
		t.Errorf("policies would read %+v", res.Content)
	}
}

func TestPoliciesSeeAll(t *testing.T) {
	for _, tc := range []struct {
		raw string
		ok  bool
	}{
		{`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}],"isError":true,"_meta":{"a":1}}`, true},
		{`{"content":[{"type":"resource","resource":{"uri":"a:b","text":"t"}}],"structuredContent":{"n":1}}`, true},
		{`{"content":[]}`, true},
		{`{"content":[{"type":"tool_result","toolUseId":"u","content":[{"type":"text","text":"s"}]}]}`, false},
		{`{"content":[{"type":"tool_use","id":"u","name":"n","input":{"s":1}}]}`, false},
		{`{"content":[{"type":"text","text":"a"}],"Content":[{"type":"text","text":"b"}]}`, false},
		{`{"content":[{"type":"text","text":"a","Text":"b"}]}`, false},
		{`{"content":[{"type":"resource_link","uri":"a:b","name":"n","icons":[{"src":"x"}]}]}`, false},
		{`{"content":[],"extra":1}`, false},
		{`{"content":[{"type":"text","text":"ghp_secret"}],"content":[{"type":"text","text":"ok"}]}`, false},
		{`{"content":[{"type":"text","text":"ghp_secret","text":"ok"}]}`, false},
		{`{"content":[{"type":"text","text":"a"},{"type":"text","_meta":{},"_meta":{"k":"ghp_secret"}}]}`, false},
		{`{"content":[{"type":"text","text":"a"}],"_meta":{"k":"ghp_secret"},"_meta":{}}`, false},
	} {
		if got := upstream.PoliciesSeeAll(json.RawMessage(tc.raw)); got != tc.ok {
			t.Errorf("%s: %v, want %v", tc.raw, got, tc.ok)
		}
	}
}

// FuzzPoliciesSeeAll: where the upstream's bytes may go on past policies,
// every block reads the same to the policies (rawABIResult) as to a client
// that matches member names loosely (encoding/json), so no text can reach
// a client around a policy.
func FuzzPoliciesSeeAll(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"x"}]}`,
		`{"content":[{"type":"text","text":"a"}],"Content":[{"type":"text","text":"b"}]}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
		`{"content":[{"type":"tool_result","toolUseId":"u","content":[{"type":"text","text":"s"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if upstream.CheckToolResult(raw) != nil || !upstream.PoliciesSeeAll(raw) {
			return
		}
		seen, err := wire.RawABIResult(raw)
		if err != nil {
			t.Fatalf("%q: policies cannot read it: %v", raw, err)
		}
		var client struct {
			Content []struct {
				Type, Text, MimeType, URI, Name string
				Data                            []byte
				Resource                        json.RawMessage
			}
		}
		if err := json.Unmarshal(raw, &client); err != nil {
			return // a client that cannot read it sees nothing
		}
		if len(client.Content) != len(seen.Content) {
			t.Fatalf("%q: %d blocks to a client, %d to policies", raw, len(client.Content), len(seen.Content))
		}
		for i, c := range client.Content {
			p := seen.Content[i]
			if c.Type != p.Type || c.Text != p.Text || c.MimeType != p.MimeType || c.URI != p.URI || c.Name != p.Name ||
				string(c.Data) != string(p.Data) || string(c.Resource) != string(p.Resource) {
				t.Fatalf("%q: block %d reads %+v to a client, %+v to policies", raw, i, c, p)
			}
		}
	})
}

// rawPair is a tapConn over an in-memory connection, read as the go-sdk's
// session would read it, and the server end of that connection.
func rawPair(t *testing.T) (*upstream.TapConn, mcp.Connection) {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	cconn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sconn, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tc := &upstream.TapConn{Connection: cconn, T: upstream.TapTransport{U: &upstream.Server{}, Bound: &atomic.Pointer[mcp.ClientSession]{}}}
	tc.Raw.Init()
	go func() {
		for {
			if _, err := tc.Read(ctx); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { tc.Close(); sconn.Close() })
	return tc, sconn
}

// A reply must carry a result or an error; a server that answers neither
// fails the call rather than pass on an empty success.
func TestRawCallReplyWithoutResult(t *testing.T) {
	for _, result := range []string{"", "null"} {
		tc, server := rawPair(t)
		go func() {
			msg, err := server.Read(context.Background())
			if err != nil {
				return
			}
			req := msg.(*jsonrpc.Request)
			_ = server.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(result)})
		}()
		if res, err := tc.CallTool(context.Background(), &upstream.RawCallParams{Name: "t"}); err == nil {
			t.Errorf("result %q: got %s, want an error", result, res)
		}
	}
}

// A connection that goes fails the raw calls in flight with
// mcp.ErrConnectionClosed; a call given up on takes its late reply with it.
func TestRawCallsEndWithTheirConnection(t *testing.T) {
	tc, server := rawPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := tc.CallTool(ctx, &upstream.RawCallParams{Name: "t"}); errc <- err }()
	msg, err := server.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first := msg.(*jsonrpc.Request)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	// The server hears of the cancellation, then answers late.
	msg, err = server.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := msg.(*jsonrpc.Request); n.Method != "notifications/cancelled" || !strings.Contains(string(n.Params), first.ID.Raw().(string)) {
		t.Fatalf("after cancelling: %s %s", n.Method, n.Params)
	}
	_ = server.Write(context.Background(), &jsonrpc.Response{ID: first.ID, Result: json.RawMessage(`{"content":[]}`)})

	go func() { _, err := tc.CallTool(context.Background(), &upstream.RawCallParams{Name: "t"}); errc <- err }()
	if _, err := server.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	server.Close()
	if err := <-errc; !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("call on a connection that went: %v", err)
	}
	if _, err := tc.CallTool(context.Background(), &upstream.RawCallParams{Name: "t"}); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("call after the connection went: %v", err)
	}
}
