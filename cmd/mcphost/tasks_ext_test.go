package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// extClient is a protocol 2026-07-28 client of the tasks extension
// (io.modelcontextprotocol/tasks), on the go-sdk's JSON-RPC types: the
// go-sdk's own client speaks neither.
type extClient struct {
	t    *testing.T
	url  string
	key  string
	ext  bool // declare the extension
	next int64
}

// send makes one request, with what protocol 2026-07-28 puts in every
// request's _meta, and returns its response.
func (c *extClient) send(method string, params map[string]any) *jsonrpc.Response {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	caps := map[string]any{}
	if c.ext {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    "2026-07-28",
		mcp.MetaKeyClientInfo:         map[string]any{"name": "ext-test", "version": "1"},
		mcp.MetaKeyClientCapabilities: caps,
	}
	raw, _ := json.Marshal(params)
	c.next++
	id, _ := jsonrpc.MakeID(float64(c.next))
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: method, Params: raw})
	if err != nil {
		c.t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if tid, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", tid) // the extension's routing header
	} else if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	msgs := responseMessages(resp)
	for _, m := range msgs {
		if msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(m)); err == nil {
			if r, ok := msg.(*jsonrpc.Response); ok && r.ID == id {
				return r
			}
		}
	}
	c.t.Fatalf("%s: no response in %d %q", method, resp.StatusCode, msgs)
	return nil
}

// result is send for a request that must succeed, its result decoded.
func (c *extClient) result(method string, params map[string]any) map[string]any {
	c.t.Helper()
	r := c.send(method, params)
	if r.Error != nil {
		c.t.Fatalf("%s: %v", method, r.Error)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Result, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// rpcCode is the JSON-RPC error code of r, 0 for none.
func rpcCode(r *jsonrpc.Response) int64 {
	var werr *jsonrpc.Error
	if r.Error == nil || !asRPCError(r.Error, &werr) {
		return 0
	}
	return werr.Code
}

func asRPCError(err error, target **jsonrpc.Error) bool {
	e, ok := err.(*jsonrpc.Error)
	*target = e
	return ok
}

// TestTasksExtension2026: a protocol 2026-07-28 client of the tasks
// extension through mcphost, against a plain (2025-era) upstream: a call
// that outlives the threshold becomes a task it polls to its result
// (through builtin:redact); a short one is answered at once; cancel
// reaches the upstream call; another identity cannot reach the task; a
// client without the extension gets no task.
func TestTasksExtension2026(t *testing.T) {
	addr := serveTasks(t)
	url := "http://" + addr + "/mcp"
	alice := &extClient{t: t, url: url, key: aliceKey, ext: true}
	bob := &extClient{t: t, url: url, key: bobKey, ext: true}

	disc := alice.result("server/discover", nil)
	if caps, _ := disc["capabilities"].(map[string]any); caps == nil || caps["extensions"] == nil ||
		caps["extensions"].(map[string]any)["io.modelcontextprotocol/tasks"] == nil {
		t.Errorf("server/discover does not offer the tasks extension: %v", disc)
	}

	// A short call is answered as any call (unless this machine is so
	// loaded that echo outlives the threshold: then it is a task).
	if r := alice.result("tools/call", map[string]any{"name": "up__echo", "arguments": map[string]any{"text": "hi"}}); r["resultType"] == "task" {
		t.Logf("echo outlived the threshold here: %v", r)
	} else if r["resultType"] != "complete" || !strings.Contains(mustJSON(r), `"hi"`) {
		t.Errorf("a short call: %v", r)
	}

	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	created := alice.result("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate}})
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" || created["status"] != "working" || created["ttlMs"] == nil {
		t.Fatalf("a long call did not become a task: %v", created)
	}
	if got := alice.result("tasks/get", map[string]any{"taskId": id}); got["status"] != "working" || got["resultType"] != "complete" {
		t.Errorf("tasks/get while the call runs: %v", got)
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if r := bob.send(m, map[string]any{"taskId": id, "inputResponses": map[string]any{}}); rpcCode(r) != -32602 {
			t.Errorf("bob's %s of alice's task: %s %v", m, r.Result, r.Error)
		}
	}
	for _, m := range []string{"tasks/list", "tasks/result"} {
		if r := alice.send(m, map[string]any{"taskId": id}); r.Error == nil {
			t.Errorf("%s, which 2026-07-28 does not have, answered %s", m, r.Result)
		}
	}
	if r := alice.result("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"x": map[string]any{}}}); r["resultType"] != "complete" {
		t.Errorf("tasks/update: %v", r)
	}

	if err := os.WriteFile(gate, []byte("deploy token "+auditToken), 0o644); err != nil {
		t.Fatal(err)
	}
	var done map[string]any
	testproc.WaitFor(t, "the task to complete", 15*time.Second, func() bool {
		done = alice.result("tasks/get", map[string]any{"taskId": id})
		return done["status"] != "working"
	})
	if s := mustJSON(done["result"]); done["status"] != "completed" || strings.Contains(s, auditToken) || !strings.Contains(s, "REDACTED") {
		t.Errorf("the completed task's result did not pass builtin:redact: %v", done)
	}

	// Cancel reaches the upstream call.
	gate2 := filepath.Join(dir, "gate2")
	created = alice.result("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate2}})
	id2, _ := created["taskId"].(string)
	testproc.WaitFor(t, "the upstream call to start", 10*time.Second, func() bool {
		_, err := os.Stat(gate2 + ".started")
		return err == nil
	})
	if r := alice.result("tasks/cancel", map[string]any{"taskId": id2}); r["resultType"] != "complete" {
		t.Errorf("tasks/cancel: %v", r)
	}
	testproc.WaitFor(t, "the upstream call to be cancelled", 10*time.Second, func() bool {
		_, err := os.Stat(gate2 + ".cancelled")
		return err == nil
	})
	if got := alice.result("tasks/get", map[string]any{"taskId": id2}); got["status"] != "cancelled" {
		t.Errorf("after tasks/cancel: %v", got)
	}

	// Without the extension, a call is a call, however long.
	plain := &extClient{t: t, url: url, key: aliceKey}
	gate3 := filepath.Join(dir, "gate3")
	go func() {
		time.Sleep(1500 * time.Millisecond) // past the threshold
		os.WriteFile(gate3, []byte("late"), 0o644)
	}()
	if r := plain.result("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate3}}); r["resultType"] == "task" || !strings.Contains(mustJSON(r), "late") {
		t.Errorf("a client without the extension: %v", r)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
