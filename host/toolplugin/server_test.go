package toolplugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
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
	t.Parallel()
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

// TestCrashBackoffIsPerCaller is issue 29's M8: a caller whose own calls
// crash the plugin again and again (here by running past the timeout) is
// put in a backoff of its own; the plugin goes on serving other callers,
// and a success of theirs does not let the first one out. Not parallel,
// unlike the other tests: it holds guest calls to a 200 ms timeout.
func TestCrashBackoffIsPerCaller(t *testing.T) {
	g := guests(t)
	ctx := context.Background()
	base, _ := os.UserCacheDir()
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: filepath.Join(base, "mcphost-test", "toolplugin-wazero")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, plugins.Spec{Name: "kit", Source: g["typed"], Kind: plugins.KindTools, Timeout: 200 * time.Millisecond, Instances: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	mallory := abi.Caller{SessionID: "s-mallory", Transport: "http"}
	alice := abi.Caller{SessionID: "s-alice", Transport: "http", Subject: "alice", AuthMethod: abi.AuthOAuth}
	call := func(c abi.Caller, name, args string) error {
		_, err := p.InvokeTool(ctx, &abi.ToolInvokeInput{Name: name, Arguments: []byte(args), Caller: c}, nil)
		return err
	}
	for i := range plugins.CrashLimit {
		if err := call(mallory, "sleep", `{"ms":10000}`); !errors.Is(err, plugins.ErrTimeout) {
			t.Fatalf("mallory's call %d: %v, want a timeout", i, err)
		}
	}
	if err := call(mallory, "noop", `{}`); !errors.Is(err, plugins.ErrUnavailable) || !strings.Contains(err.Error(), "this caller's calls") {
		t.Fatalf("mallory after %d crashes in a row: %v, want its own backoff", plugins.CrashLimit, err)
	}
	for i := range 20 {
		if err := call(alice, "noop", `{}`); err != nil {
			t.Fatalf("alice's call %d while mallory backs off: %v", i, err)
		}
	}
	if err := call(mallory, "noop", `{}`); !errors.Is(err, plugins.ErrUnavailable) {
		t.Fatalf("alice's successes let mallory out of its backoff: %v", err)
	}
	st := p.Status()
	if st.State != plugins.StateLoaded || st.BackedOffCallers != 1 || st.ConsecutiveCrashes != 0 {
		t.Errorf("status: state %s, %d callers backing off, %d consecutive crashes; want loaded, 1, 0",
			st.State, st.BackedOffCallers, st.ConsecutiveCrashes)
	}
	// Once its backoff ends, mallory is let through again.
	testproc.WaitFor(t, "mallory's backoff to end", plugins.CrashBackoff+5*time.Second, func() bool {
		return call(mallory, "noop", `{}`) == nil
	})
	if st := p.Status(); st.BackedOffCallers != 0 {
		t.Errorf("%d callers backing off after mallory's success", st.BackedOffCallers)
	}
}

// TestHTTPFailuresAreToolErrors: with the PDK's HTTPGet (ABI 1.5
// returnErrors), a URL outside allowed_hosts, a redirect out of them and a
// granted host that does not answer are the call's tool errors; the
// instance is kept and no crash is counted.
func TestHTTPFailuresAreToolErrors(t *testing.T) {
	t.Parallel()
	g := guests(t)
	ctx := context.Background()
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:1/secret", http.StatusFound)
	}))
	defer inside.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	base, _ := os.UserCacheDir()
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: filepath.Join(base, "mcphost-test", "toolplugin-wazero")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, plugins.Spec{Name: "kit", Source: g["typed"], Kind: plugins.KindTools, Timeout: 5 * time.Second,
		Instances: 1, AllowedHosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for _, c := range []struct{ url, want string }{
		{"http://localhost:1/x", "refused by allowed_hosts: "},
		{inside.URL + "/go", "refused by allowed_hosts: "},
		{closedURL + "/x", "connection refused"},
	} {
		args, _ := json.Marshal(map[string]string{"url": c.url})
		o, err := p.InvokeTool(ctx, &abi.ToolInvokeInput{Name: "fetch", Arguments: args}, nil)
		if err != nil || o.ToolError == nil || !strings.Contains(o.ToolError.Message, c.want) {
			t.Errorf("%s: %+v %v, want a tool error with %q", c.url, o, err, c.want)
		}
	}
	if st := p.Status(); st.Crashes != 0 || st.Calls != 3 {
		t.Errorf("%d crashes in %d calls, want 0 in 3", st.Crashes, st.Calls)
	}
}
