package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// searchPolicy hides up2's remove_tool from every caller and rewrites
// up's pid description, so that a search shows whether it sees the
// caller's view or the catalog.
type searchPolicy struct{ callerPolicy }

func (searchPolicy) ToolsList(_ context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	var out []abi.Tool
	for _, t := range in.Tools {
		if t.Server == "up2" && t.Tool == "remove_tool" {
			continue
		}
		if t.Server == "up" && t.Tool == "pid" {
			t.Description = "Tells the zebra number of the running process."
		}
		out = append(out, t)
	}
	return out, nil
}

func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// searchFor calls search_tools and returns the names it found, best first.
func searchFor(t *testing.T, cs *mcp.ClientSession, query string) []string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query, "limit": 5}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools %q: %v %s", query, err, text(t, res))
	}
	var out struct {
		Tools []struct{ Name, Title, Description string }
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	if len(names) > 0 && !strings.HasPrefix(text(t, res), names[0]) {
		t.Errorf("text answer %q does not start with %s", text(t, res), names[0])
	}
	return names
}

// waitListChanged waits for one notifications/tools/list_changed.
func waitListChanged(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no tools/list_changed %s", what)
	}
}

// TestSearchExposure serves three real servers (two of the test upstream,
// the go-sdk's conformance server over streamable HTTP) with exposure =
// "search" over loopback HTTP, through a policy that hides one tool and
// rewrites another's description: tools/list holds the three search tools
// and the tool always names; search finds tools of the caller's view (by
// the view's words) and never the hidden one, which describe_tools does
// not know either; a tool found, or never listed, is callable by its name
// and through call_tool; a search that finds new tools sends list_changed
// and the listing then shows them; and the index follows the catalog when
// a server adds a tool.
func TestSearchExposure(t *testing.T) {
	httpAddr := testproc.FreeAddr(t)
	startProcess(t, httpAddr, everythingBin, "-http="+httpAddr, "-stateless=false")
	h := startHost(t, Config{
		Servers: []upstream.ServerConfig{stdioServer("up"), stdioServer("up2"),
			{Name: "every", Transport: upstream.TransportStreamableHTTP, URL: "http://" + httpAddr + "/mcp"}},
		Tools: catalog.ToolsConfig{Exposure: catalog.ExposureSearch, Always: []string{"up__echo"}},
	}, &Options{Policy: searchPolicy{}})
	changed := make(chan struct{}, 16)
	cs := connectHTTP(t, h, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	ctx := context.Background()

	all := len(h.cat.Load().Tools)
	listed := listNames(t, cs)
	if want := []string{"search_tools", "describe_tools", "call_tool", "up__echo"}; !slices.Equal(listed, want) {
		t.Fatalf("tools/list of %d catalog tools = %v, want %v", all, listed, want)
	}
	if all < 30 {
		t.Fatalf("the catalog has %d tools; the test wants several servers' worth", all)
	}

	if got := okText(t, cs, "up__pid", nil); got == "" {
		t.Error("a tool never listed is not callable by its name")
	}

	found := searchFor(t, cs, "take a tool away")
	if !slices.Contains(found, "up__remove_tool") || slices.Contains(found, "up2__remove_tool") {
		t.Errorf("search found %v: want up__remove_tool and never the hidden up2__remove_tool", found)
	}
	waitListChanged(t, changed, "after a search found tools")
	listed = listNames(t, cs)
	if !slices.Contains(listed, "up__remove_tool") || slices.Contains(listed, "up2__remove_tool") {
		t.Errorf("listing after the search: %v", listed)
	}
	if got := okText(t, cs, "up__remove_tool", map[string]any{"text": "crash"}); got != "ok" {
		t.Errorf("the tool the search found, called by its name: %q", got)
	}
	if got := searchFor(t, cs, "up2 remove tool"); slices.Contains(got, "up2__remove_tool") {
		t.Errorf("the hidden tool was found by its own words: %v", got)
	}
	if got := searchFor(t, cs, "zebra"); len(got) == 0 || got[0] != "up__pid" {
		t.Errorf("search by the view's description: %v", got)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "describe_tools", Arguments: map[string]any{"names": []string{"up__remove_tool", "up2__remove_tool"}}})
	if err != nil || res.IsError {
		t.Fatalf("describe_tools: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"name":"up__remove_tool"`) || !strings.Contains(string(b), `"inputSchema"`) ||
		strings.Contains(string(b), `"name":"up2__remove_tool"`) || !strings.Contains(string(b), `"unknown":["up2__remove_tool"]`) {
		t.Errorf("describe_tools: %s", b)
	}

	if got := okText(t, cs, "call_tool", map[string]any{"name": "up__echo", "arguments": map[string]any{"text": "through call_tool"}}); got != "through call_tool" {
		t.Errorf("call_tool: %q", got)
	}
	for _, name := range []string{"call_tool", "up2__remove_tool"} {
		args := map[string]any{"text": "echo"}
		if name == "call_tool" {
			args = map[string]any{"name": "up2__remove_tool", "arguments": args}
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("the hidden tool through %s: %v", name, err)
		}
	}

	drainChanges(changed)
	okText(t, cs, "up__add_tool", map[string]any{"text": "quokka_feeder"})
	waitListChanged(t, changed, "after a server added a tool")
	// The list_changed taken may be an earlier one (a search's, queued
	// behind the drain): the catalog's follows.
	var got []string
	testproc.WaitFor(t, "the index to follow the catalog", 10*time.Second, func() bool {
		got = searchFor(t, cs, "quokka")
		return slices.Equal(got, []string{"up__quokka_feeder"})
	})
}

func drainChanges(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestSearchExposureReload starts with the default exposure, where
// search_tools is no tool and tools/list has every tool, then reloads with
// exposure = "search": every session is told its listing changed, and it
// now holds the search tools alone.
func TestSearchExposureReload(t *testing.T) {
	cfg := Config{Servers: []upstream.ServerConfig{stdioServer("up")}}
	h := startHost(t, cfg, nil)
	changed := make(chan struct{}, 16)
	cs := connectHTTP(t, h, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if listed := listNames(t, cs); len(listed) != len(h.cat.Load().Tools) || slices.Contains(listed, "search_tools") {
		t.Errorf("listing under exposure list: %v", listed)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "echo"}}); err == nil {
		t.Error("search_tools answered under exposure list")
	}
	drainChanges(changed)
	cfg.Tools.Exposure = catalog.ExposureSearch
	if err := h.Update(cfg, nil); err != nil {
		t.Fatal(err)
	}
	waitListChanged(t, changed, "after exposure changed")
	if listed := listNames(t, cs); !slices.Equal(listed, []string{"search_tools", "describe_tools", "call_tool"}) {
		t.Errorf("listing after the reload: %v", listed)
	}
}

// TestSearchExposureInMemory: a session served as stdio and embedders
// serve it (one transport, no HTTP) is told of the tools its search found
// too, and lists them after.
func TestSearchExposureInMemory(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("up")},
		Tools: catalog.ToolsConfig{Exposure: catalog.ExposureSearch}}, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := h.MCPServer(DownstreamStdio).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	changed := make(chan struct{}, 4)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-client"}, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := listNames(t, cs); len(got) != 3 {
		t.Fatalf("listing %v, want the three search tools", got)
	}
	if got := searchFor(t, cs, "repeat what I send"); len(got) == 0 || got[0] != "up__echo" {
		t.Errorf("search: %v", got)
	}
	waitListChanged(t, changed, "on a stdio-like session")
	if got := listNames(t, cs); !slices.Contains(got, "up__echo") {
		t.Errorf("listing after the search: %v", got)
	}
}
