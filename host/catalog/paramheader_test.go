package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool whose x-mcp-header annotations break the revision's rules is
// hidden, with a problem saying why; a valid one keeps its bindings.
func TestInvalidParamHeadersHideTheTool(t *testing.T) {
	good := &mcp.Tool{Name: "good", InputSchema: json.RawMessage(`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}`)}
	bad := &mcp.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object","properties":{"r":{"type":"number","x-mcp-header":"Region"}}}`)}
	c := Build(1, ToolsConfig{}, []ServerTools{{Server: "s", Tools: []*mcp.Tool{good, bad}}})
	if len(c.Tools) != 1 || c.Tools[0].Tool != "good" {
		t.Fatalf("tools: %+v", c.Tools)
	}
	if len(c.Issues) != 1 || !strings.Contains(c.Issues[0].Err.Error(), "x-mcp-header") {
		t.Errorf("issues: %v", c.Issues)
	}
	if b := c.ParamHeaders(Route{Server: "s", Tool: "good"}); len(b) != 1 || b[0].Header() != "Mcp-Param-Region" {
		t.Errorf("bindings of good: %+v", b)
	}
}
