package security

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSearchKeepsHiddenToolsHidden: under tools.exposure = "search", the
// search tools are one more way to ask about tools, so they must see what
// the caller's listing sees and no more. bob, whom a deny policy keeps
// from up__remove_tool, searches for it by its own words, asks
// describe_tools for it by name and calls it through call_tool: search
// finds it not, describe calls it unknown, and call_tool is refused with
// the policy's reason. alice, whom the policy does not cover, finds it.
func TestSearchKeepsHiddenToolsHidden(t *testing.T) {
	cfg := writeConfig(t, "", twoKeys("")+`
tools {
  exposure = "search"
}
plugin "no-removal-for-bob" {
  source  = "builtin:deny"
  callers = ["bob"]
  config  = { tools = ["up__remove_tool"] }
}
`)
	s := startServer(t, cfg)
	session := func(key string) *mcp.ClientSession {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "security-test", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{key}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	structured := func(cs *mcp.ClientSession, name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	search := map[string]any{"query": "remove_tool removes the tool named by text", "limit": 50}

	bob := session(callerBobKey)
	if got := structured(bob, "search_tools", search); strings.Contains(got, "up__remove_tool") {
		t.Errorf("bob's search found the tool hidden from him: %s", got)
	}
	if got := structured(bob, "describe_tools", map[string]any{"names": []string{"up__remove_tool"}}); strings.Contains(got, "Removes the tool") || !strings.Contains(got, `"unknown":["up__remove_tool"]`) {
		t.Errorf("describe_tools told bob of the tool hidden from him: %s", got)
	}
	text, isErr := callText(t, bob, "call_tool", map[string]any{"name": "up__remove_tool", "arguments": map[string]any{"text": "echo"}})
	if !isErr || !strings.Contains(text, "deny") {
		t.Errorf("call_tool of the hidden tool for bob: %q (isError %v), want the policy's refusal", text, isErr)
	}
	res, err := bob.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == "up__remove_tool" {
			t.Error("bob's listing shows the tool hidden from him")
		}
	}
	if echo, _ := callText(t, bob, "up__echo", map[string]any{"text": "still here"}); echo != "still here" {
		t.Errorf("up__echo, never listed, for bob: %q", echo)
	}

	alice := session(callerAliceKey)
	if got := structured(alice, "search_tools", search); !strings.Contains(got, `"name":"up__remove_tool"`) {
		t.Errorf("alice's search did not find the tool: %s", got)
	}
}
