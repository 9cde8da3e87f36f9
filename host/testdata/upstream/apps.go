package main

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The -apps server: an MCP Apps server (extension io.modelcontextprotocol/ui)
// whose tool widget links to the ui:// resource it serves (touch_widget
// tells its subscribers it changed), a tool that
// returns the extensions its client declared, and a tool whose region
// argument is mirrored into the Mcp-Param-Region header (x-mcp-header),
// which returns the header it was sent.

const (
	appsExtension = "io.modelcontextprotocol/ui"
	widgetURI     = "ui://widget/app.html" // unless -ui-uri says otherwise
)

func appsCapabilities(caps *mcp.ServerCapabilities) {
	caps.AddExtension(appsExtension, map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}})
}

// addApps adds the -apps tools and resource; uri is the widget's (tests of
// a server that claims another's name pass one).
func addApps(srv *mcp.Server, name, widgetURI string) {
	srv.AddTool(&mcp.Tool{Name: "widget", Description: "Shows a widget.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Meta:        mcp.Meta{"ui": map[string]any{"resourceUri": widgetURI}, "ui/resourceUri": widgetURI}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "widget of " + name}}}, nil
		})
	srv.AddResource(&mcp.Resource{Name: "widget", URI: widgetURI, MIMEType: "text/html;profile=mcp-app"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: widgetURI, MIMEType: "text/html;profile=mcp-app",
				Text: "<!doctype html><title>" + name + "</title>"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "touch_widget", Description: "Tells subscribers that " + widgetURI + " changed.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: widgetURI}); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "client_extensions", Description: "Returns the extensions its client declared, as JSON.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var ext map[string]any
			if ip := req.Session.InitializeParams(); ip != nil && ip.Capabilities != nil {
				ext = ip.Capabilities.Extensions
			}
			b, _ := json.Marshal(ext)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "region", Description: "Returns the Mcp-Param-Region header it was sent.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"query":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			got := "(no header)"
			if req.Extra != nil && req.Extra.Header != nil {
				if v := req.Extra.Header.Values("Mcp-Param-Region"); len(v) > 0 {
					got = v[0]
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: got}}}, nil
		})
}
