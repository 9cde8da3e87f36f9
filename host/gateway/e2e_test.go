package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return text(t, res), res.IsError
}

// okText is callText for a call that must succeed.
func okText(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	got, isErr := callText(t, cs, name, args)
	if isErr {
		t.Fatalf("%s: %s", name, got)
	}
	return got
}

// Every transport upstream (stdio, streamable HTTP, SSE), one endpoint down.
func TestAggregatesEveryUpstreamTransport(t *testing.T) {
	httpAddr := testproc.FreeAddr(t)
	startProcess(t, httpAddr, everythingBin, "-http="+httpAddr, "-stateless=false")
	sseAddr := testproc.FreeAddr(t)
	startProcess(t, sseAddr, upstreamBin, "-http="+sseAddr, "-sse", "-name", "ssesrv")

	h := startHost(t, Config{Servers: []upstream.ServerConfig{
		stdioServer("local"),
		{Name: "every", Transport: upstream.TransportStreamableHTTP, URL: "http://" + httpAddr + "/mcp"},
		{Name: "legacy", Transport: upstream.TransportSSE, URL: "http://" + sseAddr},
	}}, nil)
	for _, st := range h.Statuses() {
		if st.State != upstream.StateConnected {
			t.Fatalf("%s: state %s (%s)", st.Name, st.State, st.Error)
		}
	}
	cs := connectHTTP(t, h, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	seen := map[string]bool{}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		seen[tl.Name] = true
	}
	for _, want := range []string{"local__echo", "every__test_simple_text", "legacy__echo"} {
		if !seen[want] {
			t.Errorf("tools/list lacks %s; got %v", want, names)
		}
	}
	if seen["_mcphost_catalog"] {
		t.Errorf("the internal marker tool leaked into tools/list")
	}
	// Config order of servers, then original name.
	if !strings.HasPrefix(names[0], "local__") || !strings.HasPrefix(names[len(names)-1], "legacy__") {
		t.Errorf("order is not config order: %v", names)
	}
	for _, tl := range res.Tools {
		if tl.Name == "local__echo" && (tl.Title != "Echo" || tl.Description != "Echoes text." || tl.Annotations == nil || !tl.Annotations.ReadOnlyHint) {
			t.Errorf("local__echo lost its metadata: %+v", tl)
		}
	}

	if got, isErr := callText(t, cs, "local__echo", map[string]any{"text": "hi"}); got != "hi" || isErr {
		t.Errorf("local__echo = %q (isError %v)", got, isErr)
	}
	if got, isErr := callText(t, cs, "legacy__echo", map[string]any{"text": "sse"}); got != "sse" || isErr {
		t.Errorf("legacy__echo = %q (isError %v)", got, isErr)
	}
	if got, isErr := callText(t, cs, "every__test_simple_text", nil); isErr || got == "" {
		t.Errorf("every__test_simple_text = %q (isError %v)", got, isErr)
	}
}

func TestUnknownToolIsInvalidParams(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	cs := connectHTTP(t, h, nil)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__nope"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "a__nope") {
		t.Fatalf("err = %v, want invalid params naming a__nope", err)
	}
	// The Go API reports the same as ErrUnknownTool.
	if _, err := h.CallTool(context.Background(), abi.Caller{}, "a__nope", nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("CallTool err = %v, want ErrUnknownTool", err)
	}
}

// An upstream killed mid-call gives an error result naming it; it then
// comes back by itself.
func TestUpstreamCrashAndRecovery(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a"), stdioServer("b")}}, nil)
	cs := connectHTTP(t, h, nil)
	pid1, _ := callText(t, cs, "a__pid", nil)

	got, isErr := callText(t, cs, "a__crash", nil)
	if !isErr || !strings.Contains(got, `server "a"`) {
		t.Fatalf("crash result = %q (isError %v), want an error naming server a", got, isErr)
	}
	// b is unaffected.
	if got, _ := callText(t, cs, "b__echo", map[string]any{"text": "still here"}); got != "still here" {
		t.Errorf("b__echo = %q", got)
	}
	// Until the crash is noticed, the state still says connected: wait for
	// the reconnect itself.
	testproc.WaitFor(t, "a to reconnect", 10*time.Second, func() bool {
		st := h.Statuses()[0]
		return st.State == upstream.StateConnected && st.Reconnects >= 1
	})
	pid2, isErr := callText(t, cs, "a__pid", nil)
	if isErr || pid2 == pid1 {
		t.Fatalf("after recovery pid = %q (was %q, isError %v)", pid2, pid1, isErr)
	}
	if st := h.Statuses()[0]; st.Reconnects < 1 {
		t.Errorf("status = %+v, want a reconnect counted", st)
	}
}

// TestCallAfterACrash: a call made right after another call saw its
// server die goes to a new connection instead of failing on the dead one,
// on the go-sdk's path (an embedded caller; the go-sdk reports the death as
// a bare EOF) and on the raw path (a 2025-11-25 session over HTTP).
func TestCallAfterACrash(t *testing.T) {
	ctx := context.Background()
	t.Run("go-sdk", func(t *testing.T) {
		h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
		for range 3 {
			res, err := h.CallTool(ctx, abi.Caller{}, "a__crash", nil)
			if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "connection closed during the call") {
				t.Fatalf("a__crash: %+v, %v; want an error result saying the connection closed", res, err)
			}
			if res, err := h.CallTool(ctx, abi.Caller{}, "a__pid", nil); err != nil || res.IsError {
				t.Fatalf("a__pid at once after a crash: %+v, %v", res, err)
			}
		}
	})
	t.Run("raw", func(t *testing.T) {
		h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
		cs := connectHTTP(t, h, nil)
		before := rawCallsMade(t, h, "a")
		for range 3 {
			if got, isErr := callText(t, cs, "a__crash", nil); !isErr {
				t.Fatalf("a__crash: %q; want an error result", got)
			}
			if got, isErr := callText(t, cs, "a__pid", nil); isErr {
				t.Fatalf("a__pid at once after a crash: %q", got)
			}
		}
		if rawCallsMade(t, h, "a") == before {
			t.Error("no raw call was made: the test does not check the raw path")
		}
	})
}

// TestNeverSentReadsTheGoSDK: the go-sdk's refusal of a call on a closed
// connection is read as never sent; a call cut by its server's death is
// not (it was sent: sending it again could run it twice).
func TestNeverSentReadsTheGoSDK(t *testing.T) {
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(upstreamBin, "-name", "x")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"}); err == nil || upstream.NeverSent(err) {
		t.Errorf("a call cut by a crash: %v; NeverSent = %v, want false", err, upstream.NeverSent(err))
	}
	cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid"}); !upstream.NeverSent(err) {
		t.Errorf("a call on a closed connection: %v; NeverSent = false, want true", err)
	}
}

// TestForwardSendsANeverSentRequestAgain: a request that failed before it
// was written goes once more, on the connection that replaces the dead
// one. (The first failure is made by fn: the moment a server dies between
// calls cannot be timed from a test.)
func TestForwardSendsANeverSentRequestAgain(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	u := h.upstreamNamed("a")
	var sessions []*mcp.ClientSession
	err := h.forward(context.Background(), nil, u, "tools/call", nil, func(ctx context.Context, cs *mcp.ClientSession) error {
		sessions = append(sessions, cs)
		if len(sessions) == 1 {
			return upstream.NotSent{Err: fmt.Errorf("%w: calling \"tools/call\": file already closed", mcp.ErrConnectionClosed)}
		}
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid"})
		return err
	})
	if err != nil || len(sessions) != 2 || sessions[0] == sessions[1] {
		t.Fatalf("forward: %v after %d attempts (same session: %v); want success on a new session", err, len(sessions), len(sessions) == 2 && sessions[0] == sessions[1])
	}
	// A request that was sent is not sent again.
	sessions = nil
	err = h.forward(context.Background(), nil, u, "tools/call", nil, func(ctx context.Context, cs *mcp.ClientSession) error {
		sessions = append(sessions, cs)
		return fmt.Errorf("%w: calling \"tools/call\": EOF", mcp.ErrConnectionClosed)
	})
	if err == nil || len(sessions) != 1 {
		t.Errorf("a sent request: %v after %d attempts; want its error after 1", err, len(sessions))
	}
}

// TestReconnectByACallIsCounted: a call that finds the server lost
// connects it again before the retry timer does; that reconnect counts
// in the status (and the metric built on it) as the timer's would, once.
func TestReconnectByACallIsCounted(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	ctx := context.Background()
	if res, err := h.CallTool(ctx, abi.Caller{}, "a__crash", nil); err != nil || !res.IsError {
		t.Fatalf("a__crash: %+v, %v; want an error result", res, err)
	}
	// As soon as the loss is seen: the retry timer waits at least
	// minBackoff/2 after it.
	testproc.WaitFor(t, "the crash to be noticed", 5*time.Second, func() bool { return h.Statuses()[0].State != upstream.StateConnected })
	if res, err := h.CallTool(ctx, abi.Caller{}, "a__pid", nil); err != nil || res.IsError {
		t.Fatalf("a__pid after the crash: %+v, %v", res, err)
	}
	if st := h.Statuses()[0]; st.State != upstream.StateConnected || st.Reconnects != 1 {
		t.Fatalf("after a call reconnected the server: %+v, want connected with 1 reconnect", st)
	}
	// The retry timer the loss armed has been stopped, or has fired and
	// found the server connected: nothing is left to reconnect it.
	u := h.upstreamNamed("a")
	testproc.WaitFor(t, "no reconnect to be pending", 5*time.Second, func() bool {
		return u.Dormant()
	})
	if n := h.Statuses()[0].Reconnects; n != 1 {
		t.Errorf("%d reconnects counted for one, after the retry timer", n)
	}
}

// A server that never starts leaves the rest serving, and says why.
func TestUpstreamThatNeverStarts(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{
		stdioServer("bad", "-fail", "config file /nope is missing"),
		stdioServer("good"),
		{Name: "absent", Transport: upstream.TransportStdio, Command: "/nonexistent/mcp-server"},
	}}, nil)
	st := h.Statuses()
	if st[0].State != upstream.StateFailed || !strings.Contains(st[0].Error, "config file /nope is missing") {
		t.Errorf("bad: %+v, want failed with the server's stderr", st[0])
	}
	if st[2].State != upstream.StateFailed || !strings.Contains(st[2].Error, "/nonexistent/mcp-server") {
		t.Errorf("absent: %+v, want failed naming the command", st[2])
	}
	if st[1].State != upstream.StateConnected {
		t.Fatalf("good: %+v", st[1])
	}
	res, err := h.CallTool(context.Background(), abi.Caller{}, "good__echo", json.RawMessage(`{"text":"ok"}`))
	if err != nil || res.IsError {
		t.Fatalf("good__echo: %v %+v", err, res)
	}
	// A call to a tool of a server that never listed any names the server
	// and its state, not "unknown tool", and not its error (operators'
	// to read, in status).
	res, err = h.CallTool(context.Background(), abi.Caller{}, "bad__echo", nil)
	if err != nil || !res.IsError {
		t.Fatalf("bad__echo: %v %+v, want an error result", err, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, `server "bad" has not listed its tools yet`) || !strings.Contains(text, "retries") || strings.Contains(text, "/nope") {
		t.Errorf("bad__echo: %q", text)
	}
	// A name no server could have is still unknown.
	if _, err := h.CallTool(context.Background(), abi.Caller{}, "nosuch__echo", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("nosuch__echo: %v, want ErrUnknownTool", err)
	}
	if _, err := h.CallTool(context.Background(), abi.Caller{}, "good__nosuch", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("good__nosuch: %v, want ErrUnknownTool", err)
	}
}

func TestCallTimeout(t *testing.T) {
	sc := stdioServer("a")
	sc.Timeout = 200 * time.Millisecond
	h := startHost(t, Config{Servers: []upstream.ServerConfig{sc}}, nil)
	start := time.Now()
	res, err := h.CallTool(context.Background(), abi.Caller{}, "a__sleep", json.RawMessage(`{"millis":5000}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(t, res), "timed out after 200ms") {
		t.Fatalf("result = %q, want a timeout error", text(t, res))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timeout took %s", d)
	}
}

func TestProgressAndCancellation(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	var mu sync.Mutex
	var got []float64
	cs := connectHTTP(t, h, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if r.Params.ProgressToken == "tok-1" {
			got = append(got, r.Params.Progress)
		}
	}})
	params := &mcp.CallToolParams{Name: "a__sleep", Arguments: map[string]any{"millis": 300, "steps": 3}}
	params.SetProgressToken("tok-1")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, "three progress notifications", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3
	})

	cancelMidCall(t, h, cs)
}

// cancelMidCall checks that a client call cancelled while a__sleep runs
// frees the upstream call at once.
func cancelMidCall(t *testing.T, h *Host, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__sleep", Arguments: map[string]any{"millis": 20000}})
		errc <- err
	}()
	testproc.WaitFor(t, "the call to reach the upstream", 5*time.Second, func() bool { return h.Statuses()[0].InFlight == 1 })
	cancel()
	<-errc
	testproc.WaitFor(t, "the upstream call to end", 5*time.Second, func() bool { return h.Statuses()[0].InFlight == 0 })
}

func TestToolListChangedReachesClients(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	changed := make(chan struct{}, 10)
	cs := connectHTTP(t, h, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	callText(t, cs, "a__add_tool", map[string]any{"text": "fresh"})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed reached the client")
	}
	if got, isErr := callText(t, cs, "a__fresh", nil); isErr || got != "added tool fresh" {
		t.Fatalf("a__fresh = %q (isError %v)", got, isErr)
	}
}

func TestIdleDisconnectAndReconnectOnDemand(t *testing.T) {
	sc := stdioServer("a")
	sc.IdleTimeout = 300 * time.Millisecond
	h := startHost(t, Config{Servers: []upstream.ServerConfig{sc}}, nil)
	testproc.WaitFor(t, "idle disconnect", 5*time.Second, func() bool { return h.Statuses()[0].State == upstream.StateDisconnected })
	if n := len(mustTools(t, h)); n == 0 {
		t.Fatal("an idle server's tools must stay listed")
	}
	res, err := h.CallTool(context.Background(), abi.Caller{}, "a__echo", json.RawMessage(`{"text":"back"}`))
	if err != nil || text(t, res) != "back" {
		t.Fatalf("call after idle: %v %q", err, text(t, res))
	}
	if st := h.Statuses()[0]; st.State != upstream.StateConnected {
		t.Fatalf("state after call = %s", st.State)
	}
}

func mustTools(t *testing.T, h *Host) []abi.Tool {
	t.Helper()
	tools, err := h.Tools(context.Background(), abi.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// No upstream process or its children outlives Close.
func TestCloseEndsProcessesAndChildren(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	ctx := context.Background()
	res, _ := h.CallTool(ctx, abi.Caller{}, "a__pid", nil)
	pid, _ := strconv.Atoi(text(t, res))
	res, _ = h.CallTool(ctx, abi.Caller{}, "a__spawn_child", nil)
	child, _ := strconv.Atoi(text(t, res))
	if !testproc.Alive(pid) || !testproc.Alive(child) {
		t.Fatalf("server %d or child %d not running", pid, child)
	}
	h.Close()
	testproc.WaitFor(t, "processes to end", 5*time.Second, func() bool { return !testproc.Alive(pid) && !testproc.Alive(child) })
	if _, err := h.CallTool(ctx, abi.Caller{}, "a__pid", nil); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("call after close: %v, want ErrClosed", err)
	}
}

func TestBearerToken(t *testing.T) {
	h := startHost(t, Config{Listen: listener.Config{AuthToken: "s3cret"}, Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusForbidden}, // a key, but none of these: no login would help
		{"Bearer s3cret", http.StatusOK},
		{"bearer s3cret", http.StatusOK}, // the scheme is case-insensitive (RFC 9110)
		{"BEARER  s3cret", http.StatusOK},
		{"Basic s3cret", http.StatusUnauthorized},
		{"Bearers3cret", http.StatusUnauthorized},
		{"Bearer s3cret2", http.StatusForbidden},
		{"Bearer", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/status", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: status %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
	// A real client with the token gets through.
	c := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil)
	hc := &http.Client{Transport: upstream.HeaderTransport{Base: http.DefaultTransport, Headers: map[string]string{"Authorization": "Bearer s3cret"}}}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
}

// Every endpoint refuses a foreign Host header (DNS rebinding) and a
// browser's cross-site Origin, not only /mcp and /sse.
func TestDNSRebindingProtection(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		method, path, host, origin string
		want                       int
	}{
		{"POST", "/mcp", "evil.example.com", "", http.StatusForbidden},
		{"GET", "/status", "evil.example.com", "", http.StatusForbidden},
		{"GET", "/healthz", "evil.example.com:80", "", http.StatusForbidden},
		{"GET", "/sse", "evil.example.com", "", http.StatusForbidden},
		{"GET", "/nothing", "evil.example.com", "", http.StatusForbidden},
		{"GET", "/status", "", "https://evil.example.com", http.StatusForbidden},
		{"GET", "/healthz", "", "null", http.StatusForbidden},
		{"GET", "/status", "", "", http.StatusOK},
		{"GET", "/status", "localhost:1", "", http.StatusOK},
		{"GET", "/status", "", "http://localhost:6274", http.StatusOK}, // a local inspector
		{"GET", "/healthz", "", srv.URL, http.StatusOK},
	} {
		var body io.Reader
		if tc.method == "POST" {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		}
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, body)
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s Host %q Origin %q: status %d, want %d", tc.method, tc.path, tc.host, tc.origin, resp.StatusCode, tc.want)
		}
	}
}

func TestRequestBodyLimit(t *testing.T) {
	h := startHost(t, Config{Listen: listener.Config{MaxBodyBytes: 1024}, Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"` + strings.Repeat("a", 4096) + `"}}}`
	for _, path := range []string{"/mcp", "/sse?sessionid=x"} {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(big))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: status %d, want 413", path, resp.StatusCode)
		}
		// An MCP client shows the JSON-RPC error's words: they name the
		// setting to change.
		var msg struct {
			Error struct{ Message string }
		}
		if err := json.Unmarshal(body, &msg); err != nil || !strings.Contains(msg.Error.Message, "listen.max_body (1024 bytes)") {
			t.Errorf("%s: body %q, want a JSON-RPC error naming listen.max_body", path, body)
		}
	}
}

// Legacy SSE clients get the same catalog and calls at /sse.
func TestDownstreamSSE(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "sse-client"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: srv.URL + "/sse"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) == 0 || res.Tools[0].Name != "a__add_tool" {
		t.Fatalf("tools over SSE: %v %+v", err, res)
	}
	if got, isErr := callText(t, cs, "a__echo", map[string]any{"text": "via sse"}); got != "via sse" || isErr {
		t.Errorf("a__echo over SSE = %q (isError %v)", got, isErr)
	}
}

// TestSSEWriteFailureIsNotSentAgain: a raw call to an SSE upstream whose
// POST failed after the server took it (a proxy's 502) is not sent again:
// the tool runs once, and the caller gets an error.
func TestSSEWriteFailureIsNotSentAgain(t *testing.T) {
	var runs, running atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "inc", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "inc"}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		running.Add(1)
		defer running.Add(-1)
		runs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	sse := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var broken atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && broken.Load() {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				sse.ServeHTTP(httptest.NewRecorder(), r) // the server took it
				broken.Store(false)
				http.Error(w, "proxy timeout", http.StatusBadGateway)
				return
			}
		}
		sse.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	h := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "s", Transport: upstream.TransportSSE, URL: proxy.URL}}}, nil)
	cs := connectHTTPAt(t, h, "2025-11-25", nil)
	sessions := slices.Collect(srv.Sessions()) // the one the call will go to
	broken.Store(true)
	got, isErr := callText(t, cs, "s__inc", nil)
	// The server may or may not get to run it before the failed session
	// is closed under it; sent again, it would run (again) and answer ok.
	// Once that session has ended and no handler runs, nothing more can.
	for _, ss := range sessions {
		ended := make(chan struct{})
		go func() { ss.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("the session whose POST failed was never closed")
		}
	}
	testproc.WaitFor(t, "the tool's handlers to return", 5*time.Second, func() bool { return running.Load() == 0 })
	if n := runs.Load(); n > 1 || !isErr {
		t.Errorf("one call whose POST failed after delivery: the tool ran %d times, answer %q (isError %v); want at most once, and an error", n, got, isErr)
	}
}

// hideServer hides every tool of one server from listings and denies
// calls to it as invisible, as a per-caller policy may.
type hideServer struct {
	ToolsOnly
	server string
}

func (p hideServer) ToolsList(_ context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	var out []abi.Tool
	for _, t := range in.Tools {
		if t.Server != p.server {
			out = append(out, t)
		}
	}
	return out, nil
}

func (p hideServer) ToolCall(_ context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if in.Server == p.server {
		return &abi.CallDecision{Action: abi.ActionDeny, Hidden: true}, nil
	}
	return &abi.CallDecision{Action: abi.ActionAllow}, nil
}

func (hideServer) ToolResult(_ context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	return in.Result, nil
}

func (hideServer) Generation() uint64 { return 1 }

// TestNotListedYetFollowsPolicies: a server that never connected is named
// only to callers whose policies would show and admit its tools; to the
// others its tools are unknown, as they would be if it ran.
func TestNotListedYetFollowsPolicies(t *testing.T) {
	ctx := context.Background()
	down := upstream.ServerConfig{Name: "secret", Transport: upstream.TransportStdio, Command: "/nonexistent/secret-server"}
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a"), down}}, &Options{Policy: hideServer{server: "secret"}})
	if res, err := h.CallTool(ctx, abi.Caller{Subject: "mallory"}, "secret__x", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("a call to a hidden server that is down: %+v, %v; want unknown tool", res, err)
	}
	h = startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a"), down}}, &Options{Policy: hideServer{server: "other"}})
	res, err := h.CallTool(ctx, abi.Caller{Subject: "alice"}, "secret__x", nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `server "secret" has not listed its tools yet`) {
		t.Errorf("a call to a visible server that is down: %+v, %v; want an error result naming it", res, err)
	}
}
