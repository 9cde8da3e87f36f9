package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestTaskFailedByUpstreamError: a call run as a task of the extension
// (2026-07-28) that its upstream answers with a JSON-RPC error
// (host/testdata/taskfixtures' protocol_error_job, a second in) ends
// "failed" with the error inlined, code and message, and no result; a
// tool's own failure (failing_job, isError) still ends "completed".
func TestTaskFailedByUpstreamError(t *testing.T) {
	bins, err := testproc.Build(t.TempDir(), map[string]string{"taskfixtures": "../../host/testdata/taskfixtures"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, `
listen {
  auth {
    key "alice" {
      value   = "`+aliceKey+`"
      subject = "alice"
    }
  }
}
server "fx" {
  command = "`+bins["taskfixtures"]+`"
}
tasks {
  after = "300ms"
}
`)
	addr := testproc.FreeAddr(t)
	startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg, "--http", addr)
	alice := &extClient{t: t, url: "http://" + addr + "/mcp", key: aliceKey, ext: true}

	end := func(tool string) map[string]any {
		created := alice.result("tools/call", map[string]any{"name": "fx__" + tool, "arguments": map[string]any{}})
		id, _ := created["taskId"].(string)
		if created["resultType"] != "task" || id == "" {
			t.Fatalf("%s did not become a task: %v", tool, created)
		}
		var got map[string]any
		testproc.WaitFor(t, tool+"'s task to end", 15*time.Second, func() bool {
			got = alice.result("tasks/get", map[string]any{"taskId": id})
			return got["status"] != "working"
		})
		return got
	}
	got := end("protocol_error_job")
	e, _ := got["error"].(map[string]any)
	if code, _ := e["code"].(float64); got["status"] != "failed" || got["result"] != nil || e == nil || code == 0 ||
		!strings.Contains(mustJSON(e["message"]), "protocol_error_job always fails") {
		t.Errorf("a task whose upstream answered with a JSON-RPC error: %v, want failed with the error inlined", got)
	}
	got = end("failing_job")
	if r, _ := got["result"].(map[string]any); got["status"] != "completed" || r == nil || r["isError"] != true || got["error"] != nil {
		t.Errorf("a task whose tool failed (isError): %v, want completed with the result", got)
	}
}
