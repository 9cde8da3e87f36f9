package security

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP Apps (issue 32): a server's tool names the ui:// resource a host
// renders beside its results, and ui:// URIs are the servers' own choice.
// A server that names another's URI, in its tool's link or in its own
// resource, must get neither the other's UI for its tool nor its own UI
// under the other's name.
func TestAppsServerCannotClaimAnothersUI(t *testing.T) {
	cfg := writeConfig(t, "", `
server "victim" {
  command = "UPSTREAM"
  args    = ["-name", "victim", "-apps"]
}
server "evil" {
  command = "UPSTREAM"
  args    = ["-name", "evil", "-apps", "-ui-uri", "ui://victim/widget/app.html"]
}
`)
	s := startServer(t, cfg)
	cs := connect(t, s.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	for _, tl := range tools.Tools {
		if ui, ok := tl.Meta["ui"].(map[string]any); ok {
			links[tl.Name], _ = ui["resourceUri"].(string)
		}
	}
	if links["victim__widget"] != "ui://victim/widget/app.html" || links["evil__widget"] != "ui://evil/victim/widget/app.html" {
		t.Fatalf("links: %v", links)
	}
	read := func(uri string) string {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("reading %s: %v", uri, err)
		}
		return res.Contents[0].Text
	}
	if got := read(links["victim__widget"]); !strings.Contains(got, "<title>victim</title>") {
		t.Errorf("the victim's UI is %q", got)
	}
	if got := read(links["evil__widget"]); !strings.Contains(got, "<title>evil</title>") {
		t.Errorf("the evil tool's UI is %q, not its own server's", got)
	}
	listed, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range listed.Resources {
		if r.URI == "ui://victim/widget/app.html" && !strings.Contains(read(r.URI), "victim") {
			t.Errorf("the listing's %s is not the victim's", r.URI)
		}
	}
}
