package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/upstream"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestExecutionOfAStdioTaskServer: a stdio server that offers tasks lists
// its tools' execution on two pages; mcphost reads them with raw requests
// on the wrapped connection, lists them as the server does (unknown
// members kept, none for a tool without), to the go-sdk path and the
// shortcut alike, and refuses a plain call of the tool that requires a
// task with -32601, while the others are called.
func TestExecutionOfAStdioTaskServer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the task server of this test is a Node script")
	}
	h := startHost(t, Config{Servers: []upstream.ServerConfig{{Name: "ts", Transport: upstream.TransportStdio, Command: node, Args: []string{"testdata/taskserver.js"}}}}, nil)
	want := map[string]string{
		"ts__must":  `{"taskSupport":"required"}`,
		"ts__may":   `{"taskSupport":"optional","note":"kept"}`,
		"ts__plain": ``,
	}
	tools, err := h.Tools(context.Background(), abi.Caller{})
	if err != nil || len(tools) != len(want) {
		t.Fatalf("Tools: %+v, %v", tools, err)
	}
	for _, tool := range tools {
		if string(tool.Execution) != want[tool.Name] {
			t.Errorf("catalog: %s execution %s, want %s", tool.Name, tool.Execution, want[tool.Name])
		}
	}

	url := httptestServer(t, h) + "/mcp"
	_, s := connectAs(t, url, "c")
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	fast, shortcut := message(t, s.post(list, nil))
	slow, viaSDK := message(t, s.post(list, func(r *http.Request) { r.Header.Del("Mcp-Protocol-Version") }))
	if !shortcut || viaSDK {
		t.Fatalf("shortcut %v, then %v", shortcut, viaSDK)
	}
	for _, res := range []json.RawMessage{fast.Result, slow.Result} {
		var l struct {
			Tools []struct {
				Name      string
				Execution json.RawMessage
			}
		}
		if err := json.Unmarshal(res, &l); err != nil || len(l.Tools) != len(want) {
			t.Fatalf("tools/list: %s, %v", res, err)
		}
		for _, tool := range l.Tools {
			if string(tool.Execution) != want[tool.Name] {
				t.Errorf("tools/list: %s execution %s, want %s", tool.Name, tool.Execution, want[tool.Name])
			}
		}
	}

	_, err = h.CallTool(context.Background(), abi.Caller{}, "ts__must", nil)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("a plain call of the tool that requires a task: %v, want -32601", err)
	}
	for _, name := range []string{"ts__may", "ts__plain"} {
		res, err := h.CallTool(context.Background(), abi.Caller{}, name, nil)
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "called "+name[4:] {
			t.Errorf("a plain call of %s: %+v, %v", name, res, err)
		}
	}
}

// TestExecutionOnlyWhereTasksAreOffered: a plain server's tools list
// execution "optional" to a streamable HTTP session, which is offered tasks
// (mcphost runs them), and no execution to a session over another
// transport, which is not.
func TestExecutionOnlyWhereTasksAreOffered(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("local")}}, nil)
	_, s := connectAs(t, httptestServer(t, h)+"/mcp", "c")
	res, _ := message(t, s.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil))
	if !strings.Contains(string(res.Result), `"execution":{"taskSupport":"optional"}`) {
		t.Errorf("streamable HTTP: tools/list without execution: %.300s", res.Result)
	}

	st, ct := mcp.NewInMemoryTransports()
	ss, err := h.MCPServer(DownstreamEmbedded).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var log testproc.Buffer
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "embedded"}, nil).Connect(context.Background(), &mcp.LoggingTransport{Transport: ct, Writer: &log}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if tools, err := cs.ListTools(context.Background(), nil); err != nil || len(tools.Tools) == 0 {
		t.Fatalf("embedded tools/list: %v, %v", tools, err)
	}
	if strings.Contains(log.String(), `"execution"`) {
		t.Errorf("embedded session (no tasks capability) was listed execution: %.500s", log.String())
	}
}
