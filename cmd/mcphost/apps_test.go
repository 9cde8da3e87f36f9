package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// appsExample is the MCP Apps extension's own example server, from npm.
const appsExample = "@modelcontextprotocol/server-basic-vanillajs@2.0.3"

// installAppsExample installs the example (and with it the extension's
// own packages and the TypeScript SDK) under the test's temp dir and
// returns that directory and the example's entry point. It skips in -short
// mode and without npm.
func installAppsExample(t *testing.T) (dir, entry string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the MCP Apps example server (npm)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not on PATH: cannot install the MCP Apps example server (needs Node.js 20+ and the npm registry)")
	}
	dir = t.TempDir()
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", dir, appsExample)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", appsExample, err, out)
	}
	return dir, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-basic-vanillajs", "dist", "index.js")
}

// TestMCPAppsExampleServers: two copies of the MCP Apps example server,
// which both serve their UI as ui://get-time/mcp-app.html, behind mcphost
// run; a go-sdk client that renders MCP Apps (protocol 2026-07-28, the
// go-sdk's default) lists the tools, follows each tool's _meta link and
// reads the UI of each server, and a deny policy on one server's ui://
// resources is applied to them as to any resource. Then a host made of the
// extension's own code (testdata/apps-host.mjs: the TypeScript SDK's
// client and ext-apps' app-bridge) does the same.
func TestMCPAppsExampleServers(t *testing.T) {
	dir, entry := installAppsExample(t)
	cfg := writeConfig(t, `
server "clock" {
  command = "node"
  args    = ["`+entry+`", "--stdio"]
  connect_timeout = "60s"
}
server "timer" {
  command = "node"
  args    = ["`+entry+`", "--stdio"]
  connect_timeout = "60s"
}
plugin "no-timer-ui" {
  source = "builtin:deny"
  config = { resources = ["ui://timer/*"] }
}
`)
	addr := testproc.FreeAddr(t)
	startMcphost(t, "http://"+addr+"/healthz", 60*time.Second, "run", cfg, "--http", addr)
	ctx := context.Background()
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "apps-host", Version: "1"}, &mcp.ClientOptions{Capabilities: caps}).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	var tools *mcp.ListToolsResult
	testproc.WaitFor(t, "both servers' tools", 60*time.Second, func() bool {
		tools, err = cs.ListTools(ctx, nil)
		return err == nil && len(tools.Tools) == 2
	})
	links := map[string]string{}
	for _, tl := range tools.Tools {
		ui, _ := tl.Meta["ui"].(map[string]any)
		links[tl.Name], _ = ui["resourceUri"].(string)
	}
	if links["clock__get-time"] != "ui://clock/get-time/mcp-app.html" || links["timer__get-time"] != "ui://timer/get-time/mcp-app.html" {
		t.Fatalf("the tools link to %v", links)
	}

	// The client follows the link and reads the UI through mcphost.
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: links["clock__get-time"]})
	if err != nil {
		t.Fatalf("reading %s: %v", links["clock__get-time"], err)
	}
	if len(res.Contents) != 1 || res.Contents[0].URI != links["clock__get-time"] ||
		res.Contents[0].MIMEType != "text/html;profile=mcp-app" || !strings.Contains(strings.ToLower(res.Contents[0].Text), "<html") {
		t.Errorf("the UI read: %d contents, uri %q, mime %q", len(res.Contents), res.Contents[0].URI, res.Contents[0].MIMEType)
	}
	// The policy refuses the other server's UI, and hides it in the listing.
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: links["timer__get-time"]}); err == nil {
		t.Errorf("the deny policy let %s through", links["timer__get-time"])
	}
	listed, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.Resources) != 1 || listed.Resources[0].URI != "ui://clock/get-time/mcp-app.html" {
		t.Errorf("resources/list: %+v", listed.Resources)
	}
	// The tool itself answers as it does direct.
	call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "clock__get-time", Arguments: map[string]any{}})
	if err != nil || call.IsError || call.StructuredContent == nil {
		t.Errorf("clock__get-time: %v %+v", err, call)
	}

	script, err := os.ReadFile(filepath.Join("testdata", "apps-host.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(dir, "apps-host.mjs") // beside the packages it imports
	if err := os.WriteFile(host, script, 0o644); err != nil {
		t.Fatal(err)
	}
	nctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(nctx, "node", host, "http://"+addr+"/mcp").CombinedOutput()
	if err != nil {
		t.Fatalf("the ext-apps host: %v\n%s", err, out)
	}
	var seen struct {
		Tools map[string]struct {
			URI      string
			Error    string
			Contents []struct {
				URI, MimeType string
				HTML          bool
			}
		}
	}
	if err := json.Unmarshal(out, &seen); err != nil {
		t.Fatalf("the ext-apps host printed %s: %v", out, err)
	}
	clock, timer := seen.Tools["clock__get-time"], seen.Tools["timer__get-time"]
	if clock.URI != links["clock__get-time"] || len(clock.Contents) != 1 || clock.Contents[0].URI != clock.URI || !clock.Contents[0].HTML {
		t.Errorf("the ext-apps host, clock: %+v", clock)
	}
	if timer.URI != links["timer__get-time"] || timer.Error == "" || len(timer.Contents) != 0 {
		t.Errorf("the ext-apps host, timer (denied): %+v", timer)
	}
}
