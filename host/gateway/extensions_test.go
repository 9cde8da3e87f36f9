package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/extensions"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// appsClient is a go-sdk client that renders MCP Apps and declares an
// extension mcphost does not carry.
func appsClient() *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(extensions.UI, map[string]any{"mimeTypes": []any{extensions.UIMimeType, "text/x-test"}})
	caps.AddExtension("com.example/unknown", nil)
	return &mcp.ClientOptions{Capabilities: caps}
}

// Extensions pass both ways, and MCP Apps' ui:// resources of two servers
// that use the same URI each reach the client under their server's name.
func TestExtensionsAndAppsThroughGateway(t *testing.T) {
	perClient := stdioServer("c", "-apps")
	perClient.Sessions = upstream.SessionsPerClient
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a", "-apps"), stdioServer("b", "-apps"), perClient, stdioServer("plain")}}, nil)
	cs := connectHTTP(t, h, appsClient())
	ctx := context.Background()

	// The upstreams' offer reaches the client.
	if ext := cs.InitializeResult().Capabilities.Extensions; ext[extensions.UI] == nil || len(ext) != 1 {
		t.Errorf("extensions offered to the client: %v, want MCP Apps alone", ext)
	}

	// Each tool links to its own server's resource, under mcphost's name.
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	for _, tl := range tools.Tools {
		if ui, ok := tl.Meta["ui"].(map[string]any); ok {
			links[tl.Name], _ = ui["resourceUri"].(string)
			if flat, _ := tl.Meta["ui/resourceUri"].(string); flat != links[tl.Name] {
				t.Errorf("%s: _meta[\"ui/resourceUri\"] = %q, _meta.ui.resourceUri = %q", tl.Name, flat, links[tl.Name])
			}
		}
	}
	for _, s := range []string{"a", "b", "c"} {
		want := "ui://" + s + "/widget/app.html"
		if got := links[s+"__widget"]; got != want {
			t.Fatalf("%s__widget links to %q, want %q (all links: %v)", s, got, want, links)
		}
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: want})
		if err != nil {
			t.Fatalf("reading %s: %v", want, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != want || !strings.Contains(res.Contents[0].Text, "<title>"+s+"</title>") {
			t.Errorf("reading %s: %+v", want, res.Contents)
		}
	}
	listed, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range listed.Resources {
		uris = append(uris, r.URI)
	}
	if got := strings.Join(uris, " "); got != "ui://a/widget/app.html ui://b/widget/app.html ui://c/widget/app.html" {
		t.Errorf("resources/list: %s", got)
	}
	for _, uri := range []string{"ui://widget/app.html", "ui://plain/x", "ui://nobody/widget/app.html"} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("reading %s: no error", uri)
		}
	}

	// A shared session declares what any client may have; a client's own
	// session what that client declared, of what mcphost carries.
	for server, want := range map[string]string{
		"a": `{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}`,
		"c": `{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app","text/x-test"]}}`,
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__client_extensions", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(t, res); got != want {
			t.Errorf("%s sees the extensions %s, want %s", server, got, want)
		}
	}
	// At 2026-07-28 a client declares its capabilities in every request.
	modern := connectHTTPAt(t, h, "2026-07-28", appsClient())
	res, err := modern.CallTool(ctx, &mcp.CallToolParams{Name: "c__client_extensions", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := text(t, res), `{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app","text/x-test"]}}`; got != want {
		t.Errorf("a 2026-07-28 client's own session sees %s, want %s", got, want)
	}
	if ext := modern.InitializeResult().Capabilities.Extensions; ext[extensions.UI] == nil {
		t.Errorf("server/discover offers the extensions %v", ext)
	}
	plain := connectHTTP(t, h, nil)
	res, err = plain.CallTool(ctx, &mcp.CallToolParams{Name: "c__client_extensions", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "null" {
		t.Errorf("a client without extensions: its session sees %s", got)
	}
}

// A subscription to an exposed ui:// URI reaches the upstream under its own
// URI, and its updates come back under the exposed one.
func TestAppsResourceSubscription(t *testing.T) {
	h := startHost(t, Config{Servers: []upstream.ServerConfig{stdioServer("a", "-apps", "-subscribable")}}, nil)
	updates := make(chan string, 4)
	opts := appsClient()
	opts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI }
	cs := connectHTTP(t, h, opts)
	ctx := context.Background()
	const uri = "ui://a/widget/app.html"
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__touch_widget", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updates:
		if got != uri {
			t.Errorf("update for %q, want %q", got, uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no update for the subscribed ui:// resource")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
}
