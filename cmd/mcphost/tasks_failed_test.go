package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// serveTaskFixtures runs mcphost in front of host/testdata/taskfixtures
// (server "fx"), alice's and bob's keys, tasks.after 300ms.
func serveTaskFixtures(t *testing.T) (alice, bob *extClient) {
	t.Helper()
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
    key "bob" {
      value   = "`+bobKey+`"
      subject = "bob"
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
	url := "http://" + addr + "/mcp"
	return &extClient{t: t, url: url, key: aliceKey, ext: true}, &extClient{t: t, url: url, key: bobKey, ext: true}
}

// startTask calls fx's tool as c and returns its task id.
func startTask(t *testing.T, c *extClient, tool string, args map[string]any) string {
	t.Helper()
	created := c.result("tools/call", map[string]any{"name": "fx__" + tool, "arguments": args})
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("%s did not become a task: %v", tool, created)
	}
	return id
}

// waitTask polls c's task id until done says it is where the test wants.
func waitTask(t *testing.T, c *extClient, id, what string, done func(map[string]any) bool) map[string]any {
	t.Helper()
	var got map[string]any
	testproc.WaitFor(t, what, 15*time.Second, func() bool {
		got = c.result("tasks/get", map[string]any{"taskId": id})
		return done(got)
	})
	return got
}

func ended(m map[string]any) bool { return m["status"] != "working" && m["status"] != "input_required" }

// TestTaskFailedByUpstreamError: a call run as a task of the extension
// (2026-07-28) that its upstream answers with a JSON-RPC error
// (host/testdata/taskfixtures' protocol_error_job, a second in) ends
// "failed" with the error inlined, code and message, and no result; a
// tool's own failure (failing_job, isError) still ends "completed".
func TestTaskFailedByUpstreamError(t *testing.T) {
	alice, _ := serveTaskFixtures(t)
	got := waitTask(t, alice, startTask(t, alice, "protocol_error_job", map[string]any{}), "the task to end", ended)
	e, _ := got["error"].(map[string]any)
	if code, _ := e["code"].(float64); got["status"] != "failed" || got["result"] != nil || e == nil || code == 0 ||
		!strings.Contains(mustJSON(e["message"]), "protocol_error_job always fails") {
		t.Errorf("a task whose upstream answered with a JSON-RPC error: %v, want failed with the error inlined", got)
	}
	got = waitTask(t, alice, startTask(t, alice, "failing_job", map[string]any{}), "the task to end", ended)
	if r, _ := got["result"].(map[string]any); got["status"] != "completed" || r == nil || r["isError"] != true || got["error"] != nil {
		t.Errorf("a task whose tool failed (isError): %v, want completed with the result", got)
	}
}

// TestTaskInputRequests: what the upstream asks during a task of the
// extension (elicitation) makes the task input_required at once, with the
// questions in tasks/get's inputRequests; bob cannot see or answer
// alice's; alice's tasks/update answers them one at a time (multi_input)
// and the task completes with what she answered; a question pending when
// the task is cancelled ends the upstream's request (the task is
// cancelled, not left waiting).
func TestTaskInputRequests(t *testing.T) {
	alice, bob := serveTaskFixtures(t)
	asked := func(m map[string]any) bool { return m["status"] == "input_required" }

	id := startTask(t, alice, "confirm_delete", map[string]any{"filename": "a.txt"})
	got := waitTask(t, alice, id, "the question", asked)
	reqs, _ := got["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("tasks/get of an input_required task: %v", got)
	}
	var key string
	for k, v := range reqs {
		key = k
		if q, _ := v.(map[string]any); q["method"] != "elicitation/create" || !strings.Contains(mustJSON(q["params"]), "Delete a.txt?") {
			t.Errorf("inputRequests[%q] = %v", k, v)
		}
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": "yes"}}}
	for _, m := range []string{"tasks/get", "tasks/update"} {
		if r := bob.send(m, map[string]any{"taskId": id, "inputResponses": answer}); rpcCode(r) != -32602 {
			t.Errorf("bob's %s of alice's question: %s %v", m, r.Result, r.Error)
		}
	}
	if got := alice.result("tasks/get", map[string]any{"taskId": id}); got["status"] != "input_required" {
		t.Errorf("bob's answer reached alice's question: %v", got)
	}
	if r := alice.result("tasks/update", map[string]any{"taskId": id, "inputResponses": answer}); r["resultType"] != "complete" || r["status"] != nil {
		t.Errorf("tasks/update: %v", r)
	}
	got = waitTask(t, alice, id, "the task to end", ended)
	if got["status"] != "completed" || !strings.Contains(mustJSON(got["result"]), "deleted a.txt") {
		t.Errorf("after the answer: %v", got)
	}

	// Two at once, answered one at a time.
	id = startTask(t, alice, "multi_input", map[string]any{})
	got = waitTask(t, alice, id, "both questions", func(m map[string]any) bool {
		r, _ := m["inputRequests"].(map[string]any)
		return len(r) == 2
	})
	var keys []string
	for k, v := range got["inputRequests"].(map[string]any) {
		keys = append(keys, k)
		_ = v
	}
	prop := func(k string) string { // the property the question asks for
		if strings.Contains(mustJSON(got["inputRequests"].(map[string]any)[k]), `"first"`) {
			return "first"
		}
		return "second"
	}
	for i, k := range keys {
		r := alice.result("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
			k: map[string]any{"action": "accept", "content": map[string]any{prop(k): "A" + prop(k)}}, "no-such-key": map[string]any{"x": 1}}})
		if r["resultType"] != "complete" {
			t.Errorf("tasks/update %d: %v", i, r)
		}
		if i == 0 {
			now := alice.result("tasks/get", map[string]any{"taskId": id})
			left, _ := now["inputRequests"].(map[string]any)
			if now["status"] != "input_required" || len(left) != 1 || left[keys[1]] == nil {
				t.Errorf("after answering one of two: %v", now)
			}
		}
	}
	got = waitTask(t, alice, id, "the task to end", ended)
	if got["status"] != "completed" || !strings.Contains(mustJSON(got["result"]), "got Afirst and Asecond") {
		t.Errorf("after both answers: %v", got)
	}

	// Cancelled while asking: the upstream's question ends with an error.
	id = startTask(t, alice, "confirm_delete", map[string]any{"filename": "b.txt"})
	waitTask(t, alice, id, "the question", asked)
	alice.result("tasks/cancel", map[string]any{"taskId": id})
	if got := waitTask(t, alice, id, "the task to end", ended); got["status"] != "cancelled" {
		t.Errorf("cancelled while asking: %v", got)
	}
}
