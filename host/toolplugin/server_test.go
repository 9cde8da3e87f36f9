package toolplugin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/toolplugin"
	"github.com/mcphost-project/mcphost/internal/testproc"
	"github.com/mcphost-project/mcphost/plugins"
)

func guests(t *testing.T) map[string]string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	paths, err := testproc.BuildWasm(filepath.Join(base, "mcphost-test", "toolguests"),
		[]string{"testdata/guests/*/*.go", "../../abi/*.go", "../../abi/pdk/*.go", "../../abi/pdk/tool/*.go", "../../go.mod", "../../go.sum"},
		map[string]testproc.WasmGuest{
			"typed":    {Pkg: "./testdata/guests/typed"},
			"typed-v2": {Pkg: "./testdata/guests/typed", LDFlags: "-X main.buildVersion=v2"},
		})
	testproc.NeedGuests(t, err)
	return paths
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestServerOverTheSDKSession: the server's go-sdk path (the host's
// without shortcuts): tools listed from the plugin, calls with schemas
// checked and the caller from _meta, progress through the session, and a
// Refresh to a new version that adds a tool and tells the client.
func TestServerOverTheSDKSession(t *testing.T) {
	g := guests(t)
	ctx := context.Background()
	base, _ := os.UserCacheDir()
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: filepath.Join(base, "mcphost-test", "toolplugin-wazero")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	mgr, err := plugins.NewManager(rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close(ctx)
	spec := plugins.Spec{Name: "kit", Source: g["typed"], Kind: plugins.KindTools, Timeout: 5 * time.Second, Progress: true, ClientLog: true}
	if err := mgr.Reload(ctx, []plugins.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	s := toolplugin.New("kit", mgr, nil)
	defer s.Close()
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.MCPServer().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 10)
	progress := make(chan float64, 10)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Progress
		},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 8 {
		t.Fatalf("tools: %v %v", list, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || !strings.Contains(text(res), `"echo":"hi"`) {
		t.Fatalf("echo: %v %v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.HasPrefix(text(res), "text:") || res.Meta["io.mcphost/field"] != "text" {
		t.Fatalf("missing text: %v %+v %q", err, res, text(res))
	}
	p := &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}
	p.Meta = mcp.Meta{abi.CallerMetaKey: map[string]any{"subject": "alice", "clientName": "cli"}}
	if res, err := cs.CallTool(ctx, p); err != nil || !strings.Contains(text(res), "alice|cli") {
		t.Fatalf("whoami: %v %q", err, text(res))
	}
	p = &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
	p.SetProgressToken("tok")
	if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
		t.Fatalf("steps: %v %q", err, text(res))
	}
	for want := 1.0; want <= 3; want++ {
		select {
		case got := <-progress:
			if got != want {
				t.Errorf("progress %v, want %v", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no progress")
		}
	}

	spec.Source = g["typed-v2"]
	if err := mgr.Reload(ctx, []plugins.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed after a new version")
	}
	list, err = cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 9 {
		t.Fatalf("v2 tools: %d %v", len(list.Tools), err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil || !strings.Contains(text(res), `"version":"v2"`) {
		t.Fatalf("after the refresh: %v %q", err, text(res))
	}
}
