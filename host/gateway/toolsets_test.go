package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/toolset"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// rawPost sends one JSON-RPC message to url in session sid (none when
// empty) and returns the status, the session id answered, and the body.
func rawPost(t *testing.T, url, sid, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// TestToolsetSessionSkipsShortcuts: the tools/list and tools/call
// shortcuts find a session by its id alone; a toolset's session taken to
// /mcp must not be answered there from /mcp's view.
func TestToolsetSessionSkipsShortcuts(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("up")}, Toolsets: []toolset.Toolset{{Name: "pid", Tools: []string{"pid"}}}}, nil)
	base := httptestServer(t, h)
	status, sid, body := rawPost(t, base+"/mcp/pid", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q %s", status, sid, body)
	}
	if status, _, body := rawPost(t, base+"/mcp/pid", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", status, body)
	}
	if _, _, body := rawPost(t, base+"/mcp/pid", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.Contains(body, "up__pid") || strings.Contains(body, "up__echo") {
		t.Fatalf("tools/list at /mcp/pid: %s", body)
	}
	for _, msg := range []string{`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"leaked"}}}`} {
		status, _, body := rawPost(t, base+"/mcp", sid, msg)
		if status == http.StatusOK || strings.Contains(body, "up__echo") || strings.Contains(body, "leaked") {
			t.Errorf("a /mcp/pid session's %s at /mcp: %d\n%s", msg, status, body)
		}
	}
}

// TestToolsetPromptsAndResourcesFollowServers: a toolset serves the
// prompts, resources and templates of its servers (named, or those whose
// tools it takes), and refuses to get or read the others'.
func TestToolsetPromptsAndResourcesFollowServers(t *testing.T) {
	up := stdioServer("up", "-secrets")
	up.Env = map[string]string{"HOSTILE_SECRET": "s3cret"}
	h := startHost(t, Config{Servers: []upstream.ServerConfig{up, stdioServer("other", "-subscribable")}, Toolsets: []toolset.Toolset{
		{Name: "up", Servers: []string{"up"}},
		{Name: "ticker", Tools: []string{"update_burst"}}, // the other server's alone
		{Name: "echoes", Tools: []string{"echo"}},         // both serve echo
	}}, nil)
	base := httptestServer(t, h)
	connect := func(name string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: base + "/mcp/" + name}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	uris := func(cs *mcp.ClientSession) (out []string) {
		t.Helper()
		res, err := cs.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Resources {
			out = append(out, r.URI)
		}
		slices.Sort(out)
		return out
	}
	prompts := func(cs *mcp.ClientSession) int {
		t.Helper()
		res, err := cs.ListPrompts(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Prompts)
	}
	upCS, ticker, echoes := connect("up"), connect("ticker"), connect("echoes")
	if got := uris(upCS); !slices.Equal(got, []string{"public://readme", "secret://note"}) {
		t.Errorf("/mcp/up resources %q, want up's alone", got)
	}
	if got := uris(ticker); !slices.Equal(got, []string{"test://ticker"}) {
		t.Errorf("/mcp/ticker resources %q, want the other server's alone", got)
	}
	if got := uris(echoes); !slices.Equal(got, []string{"public://readme", "secret://note", "test://ticker"}) {
		t.Errorf("/mcp/echoes resources %q, want both servers'", got)
	}
	if prompts(upCS) != 1 || prompts(ticker) != 0 {
		t.Errorf("prompts: /mcp/up %d, /mcp/ticker %d; want 1 and 0", prompts(upCS), prompts(ticker))
	}
	if res, err := ticker.ListResourceTemplates(context.Background(), nil); err != nil || len(res.ResourceTemplates) != 0 {
		t.Errorf("/mcp/ticker templates: %v %v, want none", res, err)
	}
	if _, err := ticker.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "secret://note"}); err == nil {
		t.Error("/mcp/ticker read up's resource")
	}
	if _, err := ticker.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "up__secret_prompt"}); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
		t.Errorf("/mcp/ticker got up's prompt: %v", err)
	}
	if res, err := upCS.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "secret://note"}); err != nil || len(res.Contents) == 0 {
		t.Errorf("/mcp/up reading its own resource: %v %v", res, err)
	}
}

// TestToolsetExposures: a toolset's exposure is its endpoint's, whatever
// /mcp's: search lists the search tools (and finds only the toolset's
// tools), code lists run_code, and list lists the toolset's tools even
// under code mode on /mcp.
func TestToolsetExposures(t *testing.T) {
	h := startHost(t, Config{
		Servers: []upstream.ServerConfig{stdioServer("up")},
		Tools:   catalog.ToolsConfig{Exposure: catalog.ExposureCode},
		Toolsets: []toolset.Toolset{
			{Name: "find", Tools: []string{"echo", "pid"}, Exposure: toolset.ExposureSearch},
			{Name: "script", Tools: []string{"echo"}, Exposure: toolset.ExposureCode},
			{Name: "plain", Tools: []string{"echo", "pid"}},
		},
	}, nil)
	base := httptestServer(t, h)
	list := func(name string) (*mcp.ClientSession, []string) {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: base + name}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("%s: tools/list: %v", name, err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		return cs, names
	}
	if _, got := list("/mcp"); !slices.Equal(got, []string{"run_code"}) {
		t.Errorf("/mcp under code mode lists %v", got)
	}
	if _, got := list("/mcp/plain"); !slices.Equal(got, []string{"up__echo", "up__pid"}) {
		t.Errorf("/mcp/plain lists %v, want its two tools", got)
	}
	if _, got := list("/mcp/script"); !slices.Equal(got, []string{"run_code"}) {
		t.Errorf("/mcp/script lists %v, want run_code", got)
	}
	cs, got := list("/mcp/find")
	if !slices.Equal(got, []string{"call_tool", "describe_tools", "search_tools"}) {
		t.Fatalf("/mcp/find lists %v, want the search tools", got)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "process id", "limit": 10}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), "up__pid") || strings.Contains(string(b), "up__crash") {
		t.Errorf("search at /mcp/find answered %s: want up__pid and nothing outside the toolset", b)
	}
}
