package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestAuditEveryMethod: a prompts/get or resources/read that a policy
// refuses, and one it admits, each leave an audit line with the method,
// the outcome and what each plugin decided, as a tools/call does.
func TestAuditEveryMethod(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "audit.jsonl")
	cfg := writeConfig(t, `
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up", "-secrets"]
}
plugin "no-secrets" {
  source = "builtin:deny"
  config = { resources = "secret://*", prompts = "up__secret_prompt" }
}
audit {
  file = "`+file+`"
}
`)
	addr := testproc.FreeAddr(t)
	startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg, "--http", addr)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "audit-methods"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up__secret_prompt"}); err == nil {
		t.Fatal("the policy let up__secret_prompt through")
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://note"}); err == nil {
		t.Fatal("the policy let secret://note through")
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "public://readme"}); err != nil {
		t.Fatal(err)
	}

	want := map[string]string{"prompts/get up__secret_prompt": "denied", "resources/read secret://note": "denied", "resources/read public://readme": "ok"}
	got := map[string]audit.Entry{}
	testproc.WaitFor(t, "three request lines", 10*time.Second, func() bool {
		b, _ := os.ReadFile(file)
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var e audit.Entry
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind == audit.KindRequest {
				got[e.Method+" "+e.Name] = e
			}
		}
		return len(got) >= len(want)
	})
	for k, outcome := range want {
		e, ok := got[k]
		if !ok {
			t.Errorf("no line for %s; lines: %v", k, got)
			continue
		}
		if e.Outcome != outcome || e.Server != "up" {
			t.Errorf("%s: outcome %q on server %q, want %q on up", k, e.Outcome, e.Server, outcome)
		}
		if len(e.Decisions) != 1 || e.Decisions[0].Plugin != "no-secrets" || e.Decisions[0].Hook != "request" {
			t.Errorf("%s: decisions %+v, want one of no-secrets on request", k, e.Decisions)
			continue
		}
		if wantAction := map[string]string{"denied": "deny", "ok": "allow"}[outcome]; e.Decisions[0].Action != wantAction {
			t.Errorf("%s: the plugin's action %q, want %q", k, e.Decisions[0].Action, wantAction)
		}
	}
}
