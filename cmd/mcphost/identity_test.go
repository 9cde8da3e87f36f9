package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

const (
	aliceKey = "alice-key-0123456789abcdef"
	bobKey   = "bob-key-0123456789abcdef"
	adminKey = "admin-key-0123456789abcdef"
)

// twoUsers is the README's two-user config: alice (eng) sees everything;
// bob (ops) does not get up__pid nor the secret resource; only the admin
// key reads /status.
const twoUsers = `
listen {
  auth {
    key "alice" {
      value   = "` + aliceKey + `"
      subject = "alice"
      groups  = ["eng"]
      attributes = { team = "core" }
    }
    key "bob" {
      value   = "` + bobKey + `"
      subject = "bob"
      groups  = ["ops"]
    }
    key "admin" {
      value   = "` + adminKey + `"
      subject = "root"
      groups  = ["admins"]
    }
  }
}
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up", "-secrets"]
}
plugin "ops-limits" {
  source = "builtin:deny"
  groups = ["ops"]
  config = { tools = "up__pid", resources = "secret://*", prompts = "up__secret_prompt" }
}
`

// bearer is an http.RoundTripper that adds a token.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// TestTwoUsers: two identities through one mcphost over real HTTP, each
// seeing and calling what the policies give it, through tools, resources
// and /status; a session id is useless to another identity; no key shows
// in the debug log.
func TestTwoUsers(t *testing.T) {
	cfg := writeConfig(t, twoUsers)
	addr := testproc.FreeAddr(t)
	cmd := exec.Command(mcphostBin, "run", cfg, "--http", addr, "--log-level", "debug")
	logs := &testproc.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testproc.WaitFor(t, "mcphost to serve", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	alice, bob := connectKey(t, addr, aliceKey, nil), connectKey(t, addr, bobKey, nil)
	ctx := context.Background()
	names := func(cs *mcp.ClientSession) []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if n := names(alice); !slices.Contains(n, "up__pid") {
		t.Errorf("alice's tools lack up__pid: %v", n)
	}
	if n := names(bob); slices.Contains(n, "up__pid") || !slices.Contains(n, "up__echo") {
		t.Errorf("bob's tools: %v", n)
	}
	if res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "up__pid"}); err != nil || res.IsError {
		t.Errorf("alice calling up__pid: %v %v", res, err)
	}
	if res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "up__pid"}); err == nil && !res.IsError {
		t.Errorf("bob called up__pid")
	}
	if _, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://note"}); err != nil {
		t.Errorf("alice reading secret://note: %v", err)
	}
	if _, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://note"}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("bob reading secret://note: %v", err)
	}

	if _, err := alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__secret_prompt"}); err != nil {
		t.Errorf("alice getting up__secret_prompt: %v", err)
	}
	if _, err := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__secret_prompt"}); err == nil {
		t.Errorf("bob got up__secret_prompt")
	}
	promptNames := func(cs *mcp.ClientSession) string {
		res, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range res.Prompts {
			out = append(out, p.Name)
		}
		return strings.Join(out, ",")
	}
	if a, b := promptNames(alice), promptNames(bob); !strings.Contains(a, "up__secret_prompt") || strings.Contains(b, "up__secret_prompt") {
		t.Errorf("prompts: alice %q, bob %q", a, b)
	}

	// bob presents alice's session id: 404, as for a session that does not exist.
	post := func(token, session string) int {
		req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(bobKey, alice.ID()); code != http.StatusNotFound {
		t.Errorf("bob with alice's session: %d, want 404", code)
	}
	if code := post("", alice.ID()); code != http.StatusUnauthorized {
		t.Errorf("no token with alice's session: %d, want 401", code)
	}
	if code := post(aliceKey, alice.ID()); code != http.StatusOK {
		t.Errorf("alice with her own session: %d, want 200", code)
	}
	if names(alice) == nil {
		t.Error("alice's session broke")
	}

	// /status: admins only; /healthz open.
	for _, tc := range []struct {
		token string
		want  int
	}{{"", 401}, {bobKey, 403}, {adminKey, 200}} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/status", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("/status with %q: %d, want %d", tc.token, resp.StatusCode, tc.want)
		}
	}
	// The metrics show the calls, each with its outcome; /metrics is for
	// admins, as /status is.
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	exposition, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`mcphost_tool_calls_total{outcome="ok",server="up",tool="pid"} 1`,
		`mcphost_tool_calls_total{outcome="denied",server="",tool=""} 1`,
		`mcphost_upstream_connected{server="up",transport="stdio"} 1`,
		`mcphost_downstream_sessions{transport="http"} 2`,
		`mcphost_plugin_loaded{plugin="ops-limits"} 1`,
		`mcphost_plugin_instances{plugin="ops-limits",state="idle"} `,
		`mcphost_plugin_instances{plugin="ops-limits",state="busy"} 0`,
		`mcphost_tools_list_builds_total{result="ok"} `,
		`mcphost_plugin_hook_calls_total{hook="tool_call",plugin="ops-limits"} `,
		`mcphost_plugin_hook_duration_seconds_bucket{hook="tools_list",plugin="ops-limits",le="1"} `,
	} {
		if !strings.Contains(string(exposition), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", exposition)
	}
	req, _ = http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+bobKey)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("/metrics for bob: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	if out, _, code := mcphost(t, "status", "http://"+addr, "--token", adminKey); code != 0 || !strings.Contains(out, "connected") {
		t.Errorf("mcphost status --token: exit %d\n%s", code, out)
	}

	for _, k := range []string{aliceKey, bobKey, adminKey} {
		if bytes.Contains([]byte(logs.String()), []byte(k)) {
			t.Errorf("a key is in the debug log")
		}
	}
	if !strings.Contains(logs.String(), "another identity's session") {
		t.Errorf("the refused session is not logged:\n%s", logs.String())
	}
}
