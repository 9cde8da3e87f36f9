package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// A platform embeds the engine: build a host from a config value, start
// it, list the catalog, call a tool, read statuses, close.
func Example() {
	// A real upstream: the example clock server, built for this example.
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	clock := filepath.Join(dir, "clock")
	if err := exec.Command("go", "build", "-o", clock, "../../examples/servers/clock").Run(); err != nil {
		fmt.Println(err)
		return
	}

	h, err := gateway.New(gateway.Config{Servers: []upstream.ServerConfig{
		{Name: "clock", Command: clock},
	}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}

	tools, _ := h.Tools(ctx, abi.Caller{ClientName: "my-agent"})
	for _, t := range tools {
		fmt.Println(t.Name, "->", t.Server, t.Tool)
	}
	res, _ := h.CallTool(ctx, abi.Caller{}, "clock__days_between", json.RawMessage(`{"start":"2026-01-01","end":"2026-03-01"}`))
	fmt.Println("isError:", res.IsError, "days:", res.StructuredContent.(map[string]any)["days"])

	// A tool-level failure is a result, not a Go error.
	res, err = h.CallTool(ctx, abi.Caller{}, "clock__current_time", json.RawMessage(`{"zone":"Mars/Olympus"}`))
	fmt.Println("err:", err, "isError:", res.IsError, "text:", res.Content[0].(*mcp.TextContent).Text != "")

	for _, st := range h.Statuses() {
		fmt.Println(st.Name, st.State, st.Tools)
	}
	// Output:
	// clock__add_duration -> clock add_duration
	// clock__convert_time -> clock convert_time
	// clock__current_time -> clock current_time
	// clock__days_between -> clock days_between
	// isError: false days: 59
	// err: <nil> isError: true text: true
	// clock connected 4
}
