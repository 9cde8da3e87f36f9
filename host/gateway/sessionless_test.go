package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// clientVersions are the protocol versions the go-sdk client can ask for
// and mcphost serves on /mcp: the last three with sessions, 2026-07-28
// without (sessionless.go).
var clientVersions = []string{"2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

// everythingUpstreams returns the go-sdk conformance server as an upstream
// named "every" over each transport: stdio, legacy SSE (through
// ssebridge) and streamable HTTP, each a process of its own.
func everythingUpstreams(t *testing.T) map[string]upstream.ServerConfig {
	httpAddr := testproc.FreeAddr(t)
	startProcess(t, httpAddr, everythingBin, "-http="+httpAddr, "-stateless=false")
	sseAddr := testproc.FreeAddr(t)
	startProcess(t, sseAddr, sseBridgeBin, "-http", sseAddr, "--", everythingBin)
	return map[string]upstream.ServerConfig{
		upstream.TransportStdio:          everythingServer("every"),
		upstream.TransportSSE:            {Name: "every", Transport: upstream.TransportSSE, URL: "http://" + sseAddr},
		upstream.TransportStreamableHTTP: {Name: "every", Transport: upstream.TransportStreamableHTTP, URL: "http://" + httpAddr + "/mcp"},
	}
}

// TestClientVersionsThroughEveryUpstream: a go-sdk client at each protocol
// version, through mcphost's /mcp, over each upstream transport, gets the
// version it asked for, lists (with cache hints from 2026-07-28 on), calls
// a tool, reads a resource and gets a prompt; and sampling and elicitation
// from the upstream reach it, or, at 2026-07-28, fail with an error that
// says what to do.
func TestClientVersionsThroughEveryUpstream(t *testing.T) {
	ups := everythingUpstreams(t)
	ctx := context.Background()
	for _, tr := range []string{upstream.TransportStdio, upstream.TransportSSE, upstream.TransportStreamableHTTP} {
		h := startHost(t, Config{Servers: []upstream.ServerConfig{ups[tr]}}, nil)
		url := httptestServer(t, h) + "/mcp"
		for _, v := range clientVersions {
			t.Run(tr+"/"+v, func(t *testing.T) {
				var c samplingClient
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "versions", Version: v}, c.options()).Connect(ctx,
					&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: v})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				if got := cs.InitializeResult().ProtocolVersion; got != v {
					t.Fatalf("negotiated %s, want %s", got, v)
				}
				sessionless := v >= wire.NewProtocolVersion
				if got := cs.ID(); (got == "") != sessionless {
					t.Errorf("session id %q at %s", got, v)
				}

				tools, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !hasTool(tools.Tools, "every__test_simple_text") {
					t.Errorf("tools/list lacks every__test_simple_text (%d tools)", len(tools.Tools))
				}
				if wantScope := map[bool]string{true: "public"}[sessionless]; tools.CacheScope != wantScope {
					t.Errorf("tools/list cacheScope %q, want %q", tools.CacheScope, wantScope)
				}
				if got, isErr := callText(t, cs, "every__test_simple_text", nil); isErr || got == "" {
					t.Errorf("every__test_simple_text = %q (isError %v)", got, isErr)
				}
				rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
				if err != nil || len(rr.Contents) == 0 || rr.Contents[0].Text == "" {
					t.Errorf("resources/read: %v %+v", err, rr)
				}
				pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "every__test_simple_prompt"})
				if err != nil || len(pr.Messages) == 0 {
					t.Errorf("prompts/get: %v %+v", err, pr)
				}

				// At 2026-07-28 in rounds (rounds.go), before it mid-call.
				if got, isErr := callText(t, cs, "every__test_sampling", map[string]any{"prompt": "hi"}); isErr || got != "LLM response: echo: hi" {
					t.Errorf("sampling = %q (isError %v)", got, isErr)
				}
				if got, isErr := callText(t, cs, "every__test_elicitation", map[string]any{"message": "who?"}); isErr || !strings.Contains(got, "ada") {
					t.Errorf("elicitation = %q (isError %v)", got, isErr)
				}
				if prompts, _ := c.seen(); len(prompts) != 1 || prompts[0] != "hi" {
					t.Errorf("the client's LLM was asked %q", prompts)
				}
			})
		}
	}
}

func hasTool(tools []*mcp.Tool, name string) bool {
	for _, tl := range tools {
		if tl.Name == name {
			return true
		}
	}
	return false
}

// TestSessionlessRouting: which handler answers what, from the headers
// alone. server/discover offers 2026-07-28 beside the earlier versions; a
// 2026-07-28 request opens no session, does not count against
// listen.max_sessions, and is refused on a session's id.
func TestSessionlessRouting(t *testing.T) {
	h := startHost(t, Config{Listen: listener.Config{MaxSessions: 1}, Servers: []upstream.ServerConfig{stdioServer("a")}}, nil)
	url := httptestServer(t, h) + "/mcp"
	ctx := context.Background()
	// The one place is taken by a 2025-11-25 session.
	old, err := mcp.NewClient(&mcp.Implementation{Name: "old"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "new"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("a 2026-07-28 client beside a full session table: %v", err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Fatalf("the go-sdk client's default negotiated %s", got)
	}
	for range 3 {
		if got, isErr := callText(t, cs, "a__echo", map[string]any{"text": "x"}); isErr || got != "x" {
			t.Fatalf("a__echo = %q (isError %v)", got, isErr)
		}
	}
	if n := h.SessionCounts()[DownstreamHTTP]; n != 1 {
		t.Errorf("SessionCounts()[http] = %d, want 1 (sessionless requests are not sessions)", n)
	}
	// A third client at 2025-11-25 is refused: the cap still holds.
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "third"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}); err == nil {
		t.Error("a second session opened past max_sessions = 1")
	}

	post := func(header map[string]string, body string) (int, string) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	code, body := post(map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}, discover)
	if code != http.StatusOK || !strings.Contains(body, `"2026-07-28"`) || !strings.Contains(body, `"2025-11-25"`) {
		t.Errorf("server/discover: %d %s", code, body)
	}
	// On a session's id, 2026-07-28 is the stateful handler's to refuse.
	code, body = post(map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "Mcp-Session-Id": old.ID()},
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if code != http.StatusBadRequest {
		t.Errorf("2026-07-28 on a session: %d %s", code, body)
	}
}

// TestSessionlessIdentity: with listen.auth keys, each 2026-07-28 request
// is authenticated by its own credential (there is no session to bind
// it to): without one it gets 401; with one, policies see that identity
// and the client's name and version from the request's _meta, and not the
// protocol's own _meta keys.
func TestSessionlessIdentity(t *testing.T) {
	var seen callerLog
	h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{stdioServer("a")}}, &Options{Policy: &seen})
	url := httptestServer(t, h) + "/mcp"
	ctx := context.Background()
	connect := func(client *http.Client) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "sessionless", Version: "7"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	}
	if _, err := connect(nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("a 2026-07-28 client without a key: %v, want 401", err)
	}
	alice, err := connect(authClient("alice-key-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	if got := alice.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Fatalf("negotiated %s", got)
	}
	if got, isErr := callText(t, alice, "a__echo", map[string]any{"text": "x"}); isErr || got != "x" {
		t.Fatalf("alice: a__echo = %q (isError %v)", got, isErr)
	}
	c := seen.last()
	if c.Subject != "alice" || c.Transport != DownstreamHTTP || c.ClientName != "sessionless" || c.ClientVersion != "7" || c.SessionID != "" {
		t.Errorf("the policy saw %+v", c)
	}
	if strings.Contains(string(c.Meta), "io.modelcontextprotocol/") {
		t.Errorf("the caller's _meta carries the protocol's keys: %s", c.Meta)
	}
	bob, err := connect(authClient("bob-key-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if _, isErr := callText(t, bob, "a__echo", map[string]any{"text": "x"}); !isErr {
		t.Error("bob's call was allowed")
	}
	if c := seen.last(); c.Subject != "bob" {
		t.Errorf("the policy saw %q, want bob", c.Subject)
	}

	// A request of alice's session sent with no key is refused too.
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a 2026-07-28 request without a key: %d, want 401", resp.StatusCode)
	}
}

// callerLog is whoPolicy that also records the caller of every call.
type callerLog struct {
	whoPolicy
	mu      sync.Mutex
	callers []abi.Caller
}

func (p *callerLog) ToolCall(ctx context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	p.mu.Lock()
	p.callers = append(p.callers, in.Caller)
	p.mu.Unlock()
	return p.whoPolicy.ToolCall(ctx, in)
}

func (p *callerLog) last() abi.Caller {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.callers) == 0 {
		return abi.Caller{}
	}
	return p.callers[len(p.callers)-1]
}

// TestSessionlessPerClient: with sessions = "per_client", 2026-07-28
// requests of one identity share its upstream session (one process here),
// which outlives each request; another identity gets its own; and with
// "per_session" each request has one of its own, as a session would.
func TestSessionlessPerClient(t *testing.T) {
	for _, mode := range []string{upstream.SessionsPerClient, upstream.SessionsPerSession} {
		t.Run(mode, func(t *testing.T) {
			sc := stdioServer("a")
			sc.Sessions = mode
			h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{sc}}, nil)
			url := httptestServer(t, h) + "/mcp"
			connect := func(token string) *mcp.ClientSession {
				t.Helper()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "pc"}, nil).Connect(context.Background(),
					&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: authClient(token)}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs
			}
			pid := func(cs *mcp.ClientSession) string { return okText(t, cs, "a__pid", nil) }
			alice1, alice2, bob := connect("alice-key-0123456789"), connect("alice-key-0123456789"), connect("bob-key-0123456789")
			p1 := pid(alice1)
			p2, p3, pb := pid(alice1), pid(alice2), pid(bob)
			if pb == p1 || pb == p3 {
				t.Errorf("bob shares alice's upstream process %s", pb)
			}
			same := p1 == p2 && p2 == p3
			if mode == upstream.SessionsPerClient && !same {
				t.Errorf("alice's requests ran in processes %s, %s and %s, want one", p1, p2, p3)
			}
			if mode == upstream.SessionsPerSession && (p1 == p2 || p2 == p3) {
				t.Errorf("per_session: alice's requests shared processes %s, %s and %s", p1, p2, p3)
			}
		})
	}
}

// TestRounds: at 2026-07-28 what an upstream asks during a tools/call
// comes back as input_required, with a requestState that only the identity
// that made the call can use, once, for the same tool; the go-sdk client's
// own rounds answer sampling, elicitation and roots, one question or
// several at once, during a tools/call or a prompts/get.
func TestRounds(t *testing.T) {
	h := startHost(t, Config{Listen: listener.Config{Auth: testAuth}, Servers: []upstream.ServerConfig{everythingServer("every"), stdioServer("a")}}, nil)
	url := httptestServer(t, h) + "/mcp"
	ctx := context.Background()
	connect := func(token string, opts *mcp.ClientOptions, roots ...string) *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "rounds"}, opts)
		for _, r := range roots {
			c.AddRoots(&mcp.Root{URI: r})
		}
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: authClient(token)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s", v)
		}
		return cs
	}
	manual := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	alice, bob := connect("alice-key-0123456789", manual), connect("bob-key-0123456789", manual)
	start := func() *mcp.CallToolResult {
		t.Helper()
		res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "every__test_sampling", Arguments: map[string]any{"prompt": "by hand"}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
			t.Fatalf("the first round answered %+v, want input_required with one question", res)
		}
		return res
	}
	answers := func(res *mcp.CallToolResult) mcp.InputResponseMap {
		out := mcp.InputResponseMap{}
		for id, q := range res.InputRequests {
			p, ok := q.(*mcp.CreateMessageWithToolsParams)
			if !ok || len(p.Messages) != 1 {
				t.Fatalf("question %s is %#v, want sampling", id, q)
			}
			out[id] = &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", Content: []mcp.Content{&mcp.TextContent{Text: "by hand, answered"}}}
		}
		return out
	}
	retry := func(cs *mcp.ClientSession, name string, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"prompt": "by hand"}, InputResponses: answers(res), RequestState: res.RequestState})
	}
	// Another identity's retry, a retry for another tool, and a second
	// retry with one state are refused (the call is then cancelled).
	res := start()
	if _, err := retry(bob, "every__test_sampling", res); err == nil || !strings.Contains(err.Error(), "unknown or expired requestState") {
		t.Errorf("bob retrying alice's call: %v", err)
	}
	res = start()
	if _, err := retry(alice, "every__test_simple_text", res); err == nil || !strings.Contains(err.Error(), "unknown or expired requestState") {
		t.Errorf("a retry for another tool: %v", err)
	}
	res = start()
	done, err := retry(alice, "every__test_sampling", res)
	if err != nil || done.NeedsInput() || done.IsError || text(t, done) != "LLM response: by hand, answered" {
		t.Fatalf("alice's retry: %v %+v", err, done)
	}
	if _, err := retry(alice, "every__test_sampling", res); err == nil {
		t.Error("a requestState served twice")
	}

	// The go-sdk client's own rounds.
	var c samplingClient
	opts := c.options()
	opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada", "context": "a garden"}}, nil
	}
	auto := connect("alice-key-0123456789", opts, "file:///alice")
	if got, isErr := callText(t, auto, "a__ask_roots", nil); isErr || got != "file:///alice" {
		t.Errorf("roots = %q (isError %v)", got, isErr)
	}
	if got, isErr := callText(t, auto, "a__sample", map[string]any{"text": "two"}); isErr || got != "echo: two" {
		t.Errorf("sampling from the second server = %q (isError %v)", got, isErr)
	}
	if got, isErr := callText(t, auto, "every__test_input_required_result_multiple_inputs", nil); isErr {
		t.Errorf("several questions at once: %q", got)
	}

	pr, err := auto.GetPrompt(ctx, &mcp.GetPromptParams{Name: "every__test_input_required_result_prompt"})
	if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "Context: a garden" {
		t.Errorf("prompts/get whose server asks: %v %+v", err, pr)
	}
}

// TestRoundsNameTheReplica: a request that names the replica it was sent
// to (X-Mcphost-Replica, as HAProxy's http-send-name-header does) gets a
// requestState that starts with that name, so that the balancer can send
// the retry there; a name that could not be read back is left out. While
// a call in rounds waits for its client, Drain waits too, and the retry
// is served.
func TestRoundsNameTheReplica(t *testing.T) {
	up := stdioServer("a")
	up.Sessions = upstream.SessionsPerSession // the calls below wait at once; each asks on its own session
	h := startHost(t, Config{Servers: []upstream.ServerConfig{up}}, nil)
	url := httptestServer(t, h) + "/mcp"
	ctx := context.Background()
	manual := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	start := func(replica string) (*mcp.ClientSession, *mcp.CallToolResult) {
		t.Helper()
		hc := &http.Client{Transport: upstream.HeaderTransport{Base: http.DefaultTransport, Headers: map[string]string{"X-Mcphost-Replica": replica}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "rounds"}, manual).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__sample", Arguments: map[string]any{"text": replica}})
		if err != nil || !res.NeedsInput() || len(res.InputRequests) != 1 {
			t.Fatalf("the first round with X-Mcphost-Replica %q answered %v %+v, want input_required", replica, err, res)
		}
		return cs, res
	}
	for _, tc := range []struct{ header, prefix string }{
		{"mcphost2", "mcphost2."},
		{"pod-7_b", "pod-7_b."},
		{"", ""},
		{"a.b", ""},
		{"two words", ""},
		{strings.Repeat("x", 65), ""},
	} {
		_, res := start(tc.header)
		state, found := strings.CutPrefix(res.RequestState, tc.prefix)
		if !found || !strings.HasPrefix(state, "v1:") || strings.Contains(state, ".") {
			t.Errorf("X-Mcphost-Replica %q: requestState %q, want %q and a sealed state", tc.header, res.RequestState, tc.prefix)
		}
	}

	cs, res := start("mcphost1")
	drained := make(chan error, 1)
	go func() {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		drained <- h.Drain(dctx)
	}()
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v while a call in rounds waited for its retry", err)
	case <-time.After(300 * time.Millisecond):
	}
	answers := mcp.InputResponseMap{}
	for id := range res.InputRequests {
		answers[id] = &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", Content: []mcp.Content{&mcp.TextContent{Text: "answered"}}}
	}
	done, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__sample", Arguments: map[string]any{"text": "mcphost1"}, InputResponses: answers, RequestState: res.RequestState})
	if err != nil || done.IsError || text(t, done) != "answered" {
		t.Fatalf("the retry while draining: %v %+v", err, done)
	}
	// The other calls started above still wait; cancel them (the host's
	// close would), and the drain ends.
	h.rounds.CancelAll()
	select {
	case err := <-drained:
		if err != nil {
			t.Errorf("Drain: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Drain still waits after the calls in rounds ended")
	}
}

// TestSessionlessListChanged: a 2026-07-28 client that wants to hear of
// tool list changes subscribes (subscriptions/listen, a request of its own
// that stays open) and hears of an upstream's.
func TestSessionlessListChanged(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{everythingServer("every")}}, nil)
	changed := make(chan struct{}, 10)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "listen"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: httptestServer(t, h) + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s", v)
	}
	if got, isErr := callText(t, cs, "every__test_trigger_tool_change", nil); isErr {
		t.Fatal(got)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
}

// TestSessionlessProgress: an upstream's progress during a 2026-07-28
// call reaches the client on the call's own response stream.
func TestSessionlessProgress(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{everythingServer("every")}}, nil)
	var mu sync.Mutex
	var got []float64
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "progress"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, r.Params.Progress)
		},
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: httptestServer(t, h) + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p := &mcp.CallToolParams{Name: "every__test_tool_with_progress"}
	p.SetProgressToken("tok")
	res, err := cs.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Error("no progress reached the client before the result")
	}
}

// A call in rounds keeps the per-client upstream session it runs on when
// the request that started it (and its short-lived session) ends: without
// auth every request has a session of its own, so the upstream session is
// per request, and its end used to close the session the call waited on.
func TestRoundsOnPerRequestUpstreams(t *testing.T) {
	for _, mode := range []string{upstream.SessionsPerClient, upstream.SessionsPerSession} {
		t.Run(mode, func(t *testing.T) {
			up := stdioServer("a")
			up.Sessions = mode
			up.Timeout = 10 * time.Second
			h := startHost(t, Config{Servers: []upstream.ServerConfig{up}}, nil)
			var c samplingClient
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "rounds"}, c.options()).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: httptestServer(t, h) + "/mcp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
				t.Fatalf("negotiated %s", v)
			}
			if got, isErr := callText(t, cs, "a__sample", map[string]any{"text": "per request"}); isErr || got != "echo: per request" {
				t.Errorf("sampling in rounds = %q (isError %v)", got, isErr)
			}
		})
	}
}

// TestSessionlessResultsAsSent: a 2026-07-28 tools/call result goes out as
// the upstream's bytes (wire.RawToolResult) with the go-sdk's one annotation,
// its server info merged into the upstream's _meta: the same JSON values
// as the go-sdk's typed path gives (shortcuts off).
func TestSessionlessResultsAsSent(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	calls := []string{
		`{"name":"a__echo","arguments":{"text":"same <&> \u00e9"}}`,
		`{"name":"a__structured_key","arguments":{"text":"k"}}`,
		`{"name":"a__meta","arguments":{"text":"t"}}`,
		`{"name":"a__resource_link","arguments":{"text":"r"}}`,
		`{"name":"a__embedded","arguments":{"text":"e"}}`,
		`{"name":"a__tool_error","arguments":{"text":"failed"}}`,
	}
	answers := map[bool][]any{}
	for _, off := range []bool{false, true} {
		h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a")}}, &Options{NoShortcuts: off})
		s := rawSession{t: t, url: httptestServer(t, h) + "/mcp", version: "2026-07-28"}
		for i, params := range calls {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, strings.Replace(params, "{", "{"+meta+",", 1))
			var name struct{ Name string }
			_ = json.Unmarshal([]byte(params), &name)
			msg, _ := message(t, s.post(body, func(r *http.Request) {
				r.Header.Del("Mcp-Session-Id")
				r.Header.Set("Mcp-Method", "tools/call")
				r.Header.Set("Mcp-Name", name.Name)
			}))
			var v map[string]any
			if err := json.Unmarshal(msg.Result, &v); err != nil {
				t.Fatalf("%s: %q: %v", name.Name, msg.Result, err)
			}
			if m, _ := v["_meta"].(map[string]any); m[mcp.MetaKeyServerInfo] == nil {
				t.Errorf("%s (shortcuts off: %v): no server info in _meta: %s", name.Name, off, msg.Result)
			}
			answers[off] = append(answers[off], v)
		}
		want := uint64(len(calls))
		if off {
			want = 0
		}
		if n := rawCallsMade(t, h, "a"); n != want {
			t.Errorf("shortcuts off: %v: %d raw calls for %d tools/call, want %d", off, n, len(calls), want)
		}
	}
	for i := range calls {
		if !reflect.DeepEqual(answers[false][i], answers[true][i]) {
			t.Errorf("%s: as sent %v\ntyped %v", calls[i], answers[false][i], answers[true][i])
		}
	}
	if m, _ := answers[false][2].(map[string]any)["_meta"].(map[string]any); m["trace"] != "t" {
		t.Errorf("the upstream's own _meta was lost: %v", m)
	}
}
