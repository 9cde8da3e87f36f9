package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// TestToolsAnswerExecution: the tools' execution objects, which the
// go-sdk's mcp.Tool cannot hold, are written after each tool's members for
// protocols up to 2025-11-25, and not for 2026-07-28, which has none.
func TestToolsAnswerExecution(t *testing.T) {
	listing := func() (*mcp.ListToolsResult, wire.Executions) {
		var exec wire.Executions
		res := &mcp.ListToolsResult{NextCursor: "n", Tools: []*mcp.Tool{
			exec.Add(&mcp.Tool{Name: "a", Description: "<x>", InputSchema: json.RawMessage(`{"type":"object"}`)}, json.RawMessage(`{"taskSupport":"required"}`)),
			exec.Add(&mcp.Tool{Name: "b", InputSchema: json.RawMessage(`{"type":"object"}`)}, nil),
		}}
		return res, exec
	}
	prior := &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{}}
	res, exec := listing()
	got, err := json.Marshal(ToolsAnswer(prior, res, exec, false))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"nextCursor":"n","tools":[{"description":"\u003cx\u003e","inputSchema":{"type":"object"},"name":"a","execution":{"taskSupport":"required"}},{"inputSchema":{"type":"object"},"name":"b"}]}`
	if string(got) != want {
		t.Errorf("2025-11-25 answer:\n got %s\nwant %s", got, want)
	}
	// The shortcut's encoding (no HTML escaping) is the same answer.
	enc, err := wire.EncodeJSON(&PriorListTools{ListToolsResult: res, Execution: exec})
	if err != nil || string(enc) != strings.ReplaceAll(strings.ReplaceAll(want, `\u003c`, "<"), `\u003e`, ">") {
		t.Errorf("encoded for the shortcut: %s, %v", enc, err)
	}
	// Without executions, the answer is the go-sdk's own encoding.
	plain, _ := json.Marshal(ToolsAnswer(prior, res, nil, false))
	sdk, _ := json.Marshal(&PriorListTools{ListToolsResult: res})
	if string(plain) != string(sdk) || strings.Contains(string(plain), "execution") {
		t.Errorf("without executions: %s, want %s", plain, sdk)
	}

	newer := &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{Meta: mcp.Meta{mcp.MetaKeyProtocolVersion: wire.NewProtocolVersion}}}
	res, exec = listing()
	got, _ = json.Marshal(ToolsAnswer(newer, res, exec, false))
	if strings.Contains(string(got), "execution") || !strings.Contains(string(got), `"cacheScope":"public"`) {
		t.Errorf("2026-07-28 answer: %s", got)
	}
}

// TestBuildExecution: the catalog lists a task server's own execution
// objects, and "optional" for every tool of a server whose tasks mcphost
// runs.
func TestBuildExecution(t *testing.T) {
	tool := func(name string) *mcp.Tool {
		return &mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	c := Build(1, ToolsConfig{}, []ServerTools{
		{Server: "tasks", Tools: []*mcp.Tool{tool("req"), tool("none")}, OffersTasks: true,
			Executions: map[string]json.RawMessage{"req": json.RawMessage(`{"taskSupport":"required"}`)}},
		{Server: "plain", Tools: []*mcp.Tool{tool("req")},
			Executions: map[string]json.RawMessage{"req": json.RawMessage(`{"taskSupport":"required"}`)}},
	})
	want := map[Route]string{
		{Server: "tasks", Tool: "req"}:  `{"taskSupport":"required"}`,
		{Server: "tasks", Tool: "none"}: ``,
		{Server: "plain", Tool: "req"}:  `{"taskSupport":"optional"}`,
	}
	for r, w := range want {
		if got := c.Execution(r); string(got) != w {
			t.Errorf("%v: %s, want %s", r, got, w)
		}
	}
	if len(c.Tools) != 3 {
		t.Fatalf("tools: %+v", c.Tools)
	}
}
