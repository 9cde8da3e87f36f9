package gateway

import (
	"encoding/json"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/catalog"
	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// Plugin output reaches the host as abi values decoded from guest JSON; the
// host turns it into MCP results and views. Neither step may panic, and a
// view built from policy output only routes to tools the catalog has.
func FuzzPolicyOutputToMCP(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}],"isError":true}`),
		[]byte(`[{"name":"a__echo","server":"a","tool":"echo"}]`))
	f.Add([]byte(`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"resource","resource":{"uri":"x://y","text":"t"}}]}`),
		[]byte(`[{"name":"renamed","server":"a","tool":"echo","inputSchema":{"type":"object"}}]`))
	f.Add([]byte(`{"content":null,"structuredContent":[1,2]}`), []byte(`[{"name":"1bad","server":"a","tool":"echo"}]`))
	f.Add([]byte(`{"content":[{"type":"bogus"}]}`), []byte(`[{"name":"x","server":"nope","tool":"echo"},{"name":"x","server":"a","tool":"echo"}]`))
	cat := catalog.Build(1, catalog.ToolsConfig{Separator: "__", MaxNameLength: 64, Prefix: catalog.PrefixAlways}, []catalog.ServerTools{
		{Server: "a", Tools: tools("echo", "pid")},
	})
	f.Fuzz(func(t *testing.T, result, list []byte) {
		var res abi.CallToolResult
		if json.Unmarshal(result, &res) == nil {
			out, err := wire.FromABIResult(&res)
			if err != nil || out == nil {
				t.Fatalf("fromABIResult must answer with a result, got %v, %v", out, err)
			}
			if _, err := json.Marshal(out); err != nil {
				t.Fatalf("result does not encode: %v", err)
			}
		}
		var listed []abi.Tool
		if json.Unmarshal(list, &listed) != nil {
			return
		}
		v, err := newView(cat, listed)
		if err != nil {
			return
		}
		for name, r := range v.routes {
			if _, ok := cat.ByTool[r]; !ok || !catalog.ValidName(name, 128) {
				t.Fatalf("view routes %q to %v, which is not a valid catalog tool", name, r)
			}
		}
		if _, err := json.Marshal(v.result); err != nil {
			t.Fatalf("tools/list answer does not encode: %v", err)
		}
	})
}
