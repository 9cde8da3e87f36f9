package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

const (
	tsAliceKey = "alice-key-0123456789abcdef0123"
	tsBobKey   = "bob-key-0123456789abcdef012345"
)

// toolsetsConfig is two identities (bob an intern, whom a deny policy
// keeps from up__echo), two real servers, and two toolsets.
const toolsetsConfig = `
listen {
  http = "MCPADDR"
  auth {
    key "alice" {
      value   = "` + tsAliceKey + `"
      subject = "alice"
      groups  = ["staff"]
    }
    key "bob" {
      value   = "` + tsBobKey + `"
      subject = "bob"
      groups  = ["interns"]
    }
  }
}
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up", "-subscribable"]
}
server "clock" {
  command = "CLOCK"
}
plugin "interns" {
  source = "builtin:deny"
  groups = ["interns"]
  config = { tools = "up__echo" }
}
toolset "echoes" {
  description = "echo and pid"
  servers = ["up"]
  tools   = ["echo", "pid", "nested"]
  exclude = ["nested"]
}
toolset "clock" {
  servers = ["clock"]
}
`

// connectAt opens an MCP session to endpoint (a URL) with key as its
// bearer credential, over streamable HTTP or, with sse, legacy SSE.
func connectAt(t *testing.T, endpoint, key string, sse bool) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{key, http.DefaultTransport}}
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}
	if sse {
		tr = &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: t.Name()}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func listedNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestToolsetEndpoints runs mcphost with two toolsets and two identities:
// each toolset's endpoint (/mcp/NAME, and /sse/NAME) lists and calls only
// its tools, and its servers' resources, under each caller's policies
// (bob's deny), while /mcp serves the whole catalog.
func TestToolsetEndpoints(t *testing.T) {
	addr := testproc.FreeAddr(t)
	cfg := writeConfig(t, strings.ReplaceAll(toolsetsConfig, "MCPADDR", addr))
	proc := startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcphost:\n%s", proc.logs)
		}
	})
	base := "http://" + addr

	alice := connectAt(t, base+"/mcp/echoes", tsAliceKey, false)
	if got := listedNames(t, alice); !slices.Equal(got, []string{"up__echo", "up__pid"}) {
		t.Errorf("alice on /mcp/echoes lists %q, want [up__echo up__pid]", got)
	}
	if got, isErr := callText(t, alice, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "hi"}}); isErr || !strings.Contains(got, "hi") {
		t.Errorf("alice calling up__echo on /mcp/echoes: %q (error %v)", got, isErr)
	}
	// Outside the toolset: unknown there, though /mcp serves both.
	for _, name := range []string{"clock__current_time", "up__nested"} {
		_, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || !strings.Contains(rpcErr.Message, "unknown tool") {
			t.Errorf("alice calling %s on /mcp/echoes: %v, want unknown tool", name, err)
		}
	}
	whole := connectAt(t, base+"/mcp", tsAliceKey, false)
	if got := listedNames(t, whole); !slices.Contains(got, "clock__current_time") || !slices.Contains(got, "up__nested") {
		t.Errorf("alice on /mcp lists %q, want the whole catalog", got)
	}
	if got, isErr := callText(t, whole, &mcp.CallToolParams{Name: "clock__current_time", Arguments: map[string]any{}}); isErr {
		t.Errorf("alice calling clock__current_time on /mcp: %q", got)
	}

	// bob's policy applies on the toolset as on /mcp.
	bob := connectAt(t, base+"/mcp/echoes", tsBobKey, false)
	if got := listedNames(t, bob); slices.Contains(got, "up__nested") || !slices.Contains(got, "up__pid") {
		t.Errorf("bob on /mcp/echoes lists %q", got)
	}
	if got, isErr := callText(t, bob, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "hi"}}); !isErr || !strings.Contains(got, `denied: policy "interns"`) {
		t.Errorf("bob calling up__echo on /mcp/echoes: %q (error %v), want the policy's refusal", got, isErr)
	}
	if got, isErr := callText(t, bob, &mcp.CallToolParams{Name: "up__pid", Arguments: map[string]any{}}); isErr {
		t.Errorf("bob calling up__pid on /mcp/echoes: %q", got)
	}

	// Resources follow their servers.
	res, err := alice.ListResources(context.Background(), nil)
	if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != "test://ticker" {
		t.Errorf("resources on /mcp/echoes: %v, %v; want up's test://ticker", res, err)
	}
	clock := connectAt(t, base+"/sse/clock", tsAliceKey, true)
	if got := listedNames(t, clock); len(got) == 0 || slices.ContainsFunc(got, func(n string) bool { return !strings.HasPrefix(n, "clock__") }) {
		t.Errorf("alice on /sse/clock lists %q, want the clock's tools alone", got)
	}
	if res, err := clock.ListResources(context.Background(), nil); err != nil || len(res.Resources) != 0 {
		t.Errorf("resources on /sse/clock: %v, %v; want none", res, err)
	}
	if _, err := clock.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://ticker"}); err == nil {
		t.Error("reading up's resource through /sse/clock succeeded")
	}

	// No such toolset.
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp/nope", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tsAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /mcp/nope: %d, want 404", resp.StatusCode)
	}
}

// TestToolsetsThroughAdminAPI: a toolset added with `mcphost toolsets set`
// is served at once at its endpoint, changes with the next set (its
// client told of the change), lists beside the config's, and answers 404
// once deleted; a config toolset cannot be changed.
func TestToolsetsThroughAdminAPI(t *testing.T) {
	addr, adminAddr := testproc.FreeAddr(t), testproc.FreeAddr(t)
	const opsKey = "ops-key-0123456789abcdef0123"
	cfgText := strings.ReplaceAll(toolsetsConfig, "MCPADDR", addr)
	cfgText = strings.Replace(cfgText, "  auth {\n", "  auth {\n    admin_groups = [\"admins\"]\n    key \"ops\" {\n      value   = \""+opsKey+"\"\n      subject = \"ops\"\n      groups  = [\"admins\"]\n    }\n", 1)
	cfgText += fmt.Sprintf("admin {\n  http = %q\n}\nstore {\n  sqlite = %q\n}\n", adminAddr, t.TempDir()+"/mcphost.db")
	cfg := writeConfig(t, cfgText)
	proc := startMcphost(t, "http://"+adminAddr+"/openapi.json", 30*time.Second, "run", cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcphost:\n%s", proc.logs)
		}
	})
	cli := func(args ...string) string {
		t.Helper()
		out, errs, code := mcphost(t, append(args, "--admin", "http://"+adminAddr, "--key", opsKey)...)
		if code != 0 {
			t.Fatalf("mcphost %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	out := cli("toolsets", "set", "pids", "--server", "up", "--tool", "pid", "--description", "the pid alone")
	if !strings.Contains(out, "toolset pids (store): served at /mcp/pids") || !strings.Contains(out, "the pid alone") {
		t.Errorf("toolsets set printed:\n%s", out)
	}
	changed := make(chan struct{}, 1)
	hc := &http.Client{Transport: bearer{tsAliceKey, http.DefaultTransport}}
	c := mcp.NewClient(&mcp.Implementation{Name: t.Name()}, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp/pids", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := listedNames(t, cs); !slices.Equal(got, []string{"up__pid"}) {
		t.Errorf("/mcp/pids lists %q, want [up__pid]", got)
	}
	cli("toolsets", "set", "pids", "--server", "up", "--tool", "pid", "--tool", "echo")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed on /mcp/pids after its toolset changed")
	}
	if got := listedNames(t, cs); !slices.Equal(got, []string{"up__echo", "up__pid"}) {
		t.Errorf("/mcp/pids lists %q after the change, want [up__echo up__pid]", got)
	}
	list := cli("toolsets", "list")
	for _, want := range []string{"echoes  config", "pids    store"} {
		if !strings.Contains(list, want) {
			t.Errorf("toolsets list lacks %q:\n%s", want, list)
		}
	}
	if out, errs, code := mcphost(t, "toolsets", "delete", "echoes", "--admin", "http://"+adminAddr, "--key", opsKey); code == 0 || !strings.Contains(out+errs, "config") {
		t.Errorf("deleting a config toolset: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code := mcphost(t, "toolsets", "set", "bad", "--exposure", "most", "--admin", "http://"+adminAddr, "--key", opsKey); code == 0 || !strings.Contains(out+errs, "exposure") {
		t.Errorf("a toolset of an unknown exposure: exit %d\n%s%s", code, out, errs)
	}
	// The provider formats, for an agent engine that calls a toolset's tools.
	adminGet := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+adminAddr+path, nil)
		req.Header.Set("Authorization", "Bearer "+opsKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := adminGet("/v1/tools?toolset=pids&format=openai"); status != http.StatusOK || !strings.Contains(body, `"up__pid"`) || !strings.Contains(body, `"up__echo"`) || strings.Contains(body, "clock__") || strings.Contains(body, "up__nested") {
		t.Errorf("GET /v1/tools?toolset=pids&format=openai: %d\n%s", status, body)
	}
	if status, body := adminGet("/v1/tools?toolset=nope"); status != http.StatusNotFound {
		t.Errorf("GET /v1/tools?toolset=nope: %d\n%s", status, body)
	}
	if status, body := adminGet("/v1/tools:stats"); status != http.StatusOK || !strings.Contains(body, `"encoding": "cl100k_base"`) || !strings.Contains(body, `"name": "pids"`) {
		t.Errorf("GET /v1/tools:stats: %d\n%s", status, body)
	}
	cli("toolsets", "delete", "pids")
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp/pids", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tsAliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /mcp/pids after its deletion: %d, want 404", resp.StatusCode)
	}
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Error("a session of a deleted toolset still lists tools")
	}
}

// TestToolsStatsCompact: mcphost tools --stats measures a real catalog
// (the clock example and the test upstream) before and after
// builtin:compact, which logs what it saved; --toolset keeps to a
// toolset's tools in the provider formats too.
func TestToolsStatsCompact(t *testing.T) {
	cfg := writeConfig(t, `
server "clock" {
  command = "CLOCK"
}
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
}
plugin "compact" {
  source = "builtin:compact"
  config = { output_schemas = "false", max_description = "40" }
}
toolset "clock" {
  servers = ["clock"]
  tools   = ["current_time", "convert_time"]
}
`)
	out, errs, code := mcphost(t, "tools", cfg, "--stats", "--json", "--log-level", "info")
	if code != 0 {
		t.Fatalf("tools --stats: exit %d\n%s%s", code, out, errs)
	}
	var r struct {
		Encoding string
		Servers  []struct {
			Name          string
			Before, After struct{ Tools, Bytes, Tokens int }
		}
		Toolsets []struct {
			Name          string
			Before, After struct{ Tools, Bytes, Tokens int }
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Encoding != "cl100k_base" || len(r.Servers) != 2 || r.Servers[0].Name != "clock" || len(r.Toolsets) != 1 {
		t.Fatalf("stats: %+v", r)
	}
	clock := r.Servers[0]
	if clock.Before.Tools != 4 || clock.After.Tools != 4 || clock.Before.Tokens == 0 || clock.After.Tokens*2 > clock.Before.Tokens || clock.After.Bytes >= clock.Before.Bytes {
		t.Errorf("the clock's catalog under compact (no output schemas): %+v, want half the tokens or fewer", clock)
	}
	if ts := r.Toolsets[0]; ts.Before.Tools != 2 || ts.After.Tools != 2 || ts.After.Tokens >= ts.Before.Tokens {
		t.Errorf("toolset clock: %+v", ts)
	}
	if !strings.Contains(errs, "compact: ") || !strings.Contains(errs, "bytes of titles, descriptions and schemas saved") {
		t.Errorf("compact logged nothing of what it saved:\n%s", errs)
	}
	out, errs, code = mcphost(t, "tools", cfg, "--toolset", "clock", "--format", "openai")
	if code != 0 || strings.Count(out, `"name": "clock__`) != 2 || strings.Contains(out, "up__") {
		t.Errorf("tools --toolset clock --format openai: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := mcphost(t, "tools", cfg, "--toolset", "clocks"); code == 0 || !strings.Contains(errs, `Did you mean "clock"?`) {
		t.Errorf("tools --toolset clocks: exit %d\n%s", code, errs)
	}
}
