package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// rpcClient is a 2025-11-25 streamable HTTP client written on net/http: the
// go-sdk's client knows no tasks, and these tests must see the wire.
type rpcClient struct {
	t       *testing.T
	url     string
	key     string
	session string
	next    int
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// post sends one message and returns the response to it (nil for a
// notification), reading a JSON or an event-stream answer.
func (c *rpcClient) post(method string, params any, notify bool) (json.RawMessage, *rpcError) {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if !notify {
		c.next++
		msg["id"] = c.next
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	if notify {
		return nil, nil
	}
	msgs := responseMessages(resp)
	for _, m := range msgs {
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if json.Unmarshal(m, &r) == nil && r.ID == c.next && (r.Result != nil || r.Error != nil) {
			return r.Result, r.Error
		}
	}
	c.t.Fatalf("%s: no response in %d %q", method, resp.StatusCode, msgs)
	return nil, nil
}

// must is post for a request that must succeed.
func (c *rpcClient) must(method string, params any) json.RawMessage {
	c.t.Helper()
	res, rerr := c.post(method, params, false)
	if rerr != nil {
		c.t.Fatalf("%s: %d %s", method, rerr.Code, rerr.Message)
	}
	return res
}

// taskClient opens a 2025-11-25 session with key and returns it with its
// initialize result.
func taskClient(t *testing.T, addr, key string) (*rpcClient, json.RawMessage) {
	c := &rpcClient{t: t, url: "http://" + addr + "/mcp", key: key}
	init := c.must("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "tasks-test", "version": "1"}})
	c.post("notifications/initialized", nil, true)
	return c, init
}

type wireTask struct {
	TaskID string `json:"taskId"`
	Status string `json:"status"`
	TTL    *int64 `json:"ttl"`
}

// serveTasks runs mcphost for the task tests: alice and bob with keys,
// the test upstream, builtin:redact; it returns the listen address.
func serveTasks(t *testing.T) string {
	t.Helper()
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
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
}
plugin "redact" {
  source = "builtin:redact"
}
`)
	addr := testproc.FreeAddr(t)
	startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg, "--http", addr)
	return addr
}

// TestTasksRunByMcphost: a plain upstream's slow tool called as a task
// (2025-11-25) through mcphost: the call outlives its request, its result
// passes builtin:redact, cancel reaches the upstream call, and another
// identity can neither see, fetch, list nor cancel the task.
func TestTasksRunByMcphost(t *testing.T) {
	addr := serveTasks(t)

	alice, init := taskClient(t, addr, aliceKey)
	var ir struct {
		Capabilities struct {
			Tasks struct {
				Requests struct {
					Tools struct {
						Call *struct{} `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(init, &ir); err != nil || ir.Capabilities.Tasks.Requests.Tools.Call == nil {
		t.Fatalf("initialize does not offer tasks for tools/call: %s", init)
	}
	bob, _ := taskClient(t, addr, bobKey)
	// The plain upstream has no tasks: mcphost runs them, so every tool
	// may be called either way, and its listing says so.
	for name, e := range listedExecutions(t, alice.must("tools/list", nil)) {
		if e != `{"taskSupport":"optional"}` {
			t.Errorf("tool %s lists execution %q, want optional", name, e)
		}
	}

	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	var created struct{ Task wireTask }
	res := alice.must("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate}, "task": map[string]any{"ttl": 60000}})
	if err := json.Unmarshal(res, &created); err != nil || created.Task.TaskID == "" || created.Task.Status != "working" || created.Task.TTL == nil || *created.Task.TTL != 60000 {
		t.Fatalf("tools/call as a task: %s", res)
	}
	id := created.Task.TaskID
	var got wireTask
	json.Unmarshal(alice.must("tasks/get", map[string]any{"taskId": id}), &got)
	if got.TaskID != id || got.Status != "working" {
		t.Fatalf("tasks/get while the call waits: %+v", got)
	}

	// Bob holds the id, and it is worth nothing to him.
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if _, rerr := bob.post(m, map[string]any{"taskId": id}, false); rerr == nil || rerr.Code != -32602 {
			t.Errorf("bob's %s of alice's task: %+v, want -32602", m, rerr)
		}
	}
	if l := bob.must("tasks/list", nil); strings.Contains(string(l), id) {
		t.Errorf("bob's tasks/list shows alice's task: %s", l)
	}

	if err := os.WriteFile(gate, []byte("deploy token "+auditToken), 0o644); err != nil {
		t.Fatal(err)
	}
	out := alice.must("tasks/result", map[string]any{"taskId": id})
	if strings.Contains(string(out), auditToken) || !strings.Contains(string(out), "REDACTED") {
		t.Errorf("the task's result did not pass builtin:redact: %s", out)
	}
	var meta struct {
		Meta map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	if json.Unmarshal(out, &meta); meta.Meta["io.modelcontextprotocol/related-task"].TaskID != id {
		t.Errorf("tasks/result's _meta does not name the task: %s", out)
	}
	json.Unmarshal(alice.must("tasks/get", map[string]any{"taskId": id}), &got)
	if got.Status != "completed" {
		t.Errorf("after the result, the task is %q", got.Status)
	}
	if l := alice.must("tasks/list", nil); !strings.Contains(string(l), id) {
		t.Errorf("alice's tasks/list lacks her task: %s", l)
	}

	// Cancel reaches the upstream call.
	gate2 := filepath.Join(dir, "gate2")
	res = alice.must("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate2}, "task": map[string]any{}})
	json.Unmarshal(res, &created)
	testproc.WaitFor(t, "the upstream call to start", 10*time.Second, func() bool {
		_, err := os.Stat(gate2 + ".started")
		return err == nil
	})
	json.Unmarshal(alice.must("tasks/cancel", map[string]any{"taskId": created.Task.TaskID}), &got)
	if got.Status != "cancelled" {
		t.Errorf("tasks/cancel: %+v", got)
	}
	testproc.WaitFor(t, "the upstream call to be cancelled", 10*time.Second, func() bool {
		_, err := os.Stat(gate2 + ".cancelled")
		return err == nil
	})
	if _, rerr := alice.post("tasks/cancel", map[string]any{"taskId": created.Task.TaskID}, false); rerr == nil || rerr.Code != -32602 {
		t.Errorf("cancelling a cancelled task: %+v", rerr)
	}
	// An id mcphost did not make.
	if _, rerr := alice.post("tasks/get", map[string]any{"taskId": fmt.Sprint(id, "x")}, false); rerr == nil || rerr.Code != -32602 {
		t.Errorf("tasks/get of an altered id: %+v", rerr)
	}
}

// listedExecutions returns each tool's execution object (as compact
// JSON; "" for none) of a tools/list result.
func listedExecutions(t *testing.T, res json.RawMessage) map[string]string {
	t.Helper()
	var l struct {
		Tools []struct {
			Name      string          `json:"name"`
			Execution json.RawMessage `json:"execution"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &l); err != nil || len(l.Tools) == 0 {
		t.Fatalf("tools/list: %s, %v", res, err)
	}
	out := map[string]string{}
	for _, tool := range l.Tools {
		var b bytes.Buffer
		if len(tool.Execution) > 0 {
			json.Compact(&b, tool.Execution)
		}
		out[tool.Name] = b.String()
	}
	return out
}

// responseMessages returns the JSON-RPC messages of a streamable HTTP
// answer: each event's data of an event stream, or the JSON body.
func responseMessages(resp *http.Response) [][]byte {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return [][]byte{b}
	}
	var msgs [][]byte
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			msgs = append(msgs, []byte(d))
		}
	}
	return msgs
}

// openEvents opens c's standalone event stream (GET /mcp) and returns the
// messages read from it, as they come; the stream closes with the test.
func (c *rpcClient) openEvents(sid string) (<-chan json.RawMessage, int) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	msgs := make(chan json.RawMessage, 16)
	if resp.StatusCode != http.StatusOK {
		close(msgs)
		return msgs, resp.StatusCode
	}
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs <- json.RawMessage(data)
			}
		}
	}()
	return msgs, resp.StatusCode
}

// nextStatus returns the next notifications/tasks/status read from msgs.
func nextStatus(t *testing.T, msgs <-chan json.RawMessage) wireTask {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("the event stream closed")
			}
			var n struct {
				Method string   `json:"method"`
				Params wireTask `json:"params"`
			}
			if json.Unmarshal(m, &n) == nil && n.Method == "notifications/tasks/status" {
				return n.Params
			}
		case <-timeout:
			t.Fatal("no notifications/tasks/status in 20 s")
		}
	}
}

// TestTaskStatusNotifications: a task mcphost runs tells its session's
// event stream of each change of its status, under the id the client
// knows: completed, and cancelled.
func TestTaskStatusNotifications(t *testing.T) {
	addr := serveTasks(t)
	alice, _ := taskClient(t, addr, aliceKey)
	events, code := alice.openEvents(alice.session)
	if code != http.StatusOK {
		t.Fatalf("GET /mcp: HTTP %d", code)
	}
	dir := t.TempDir()
	var created struct{ Task wireTask }
	for _, end := range []string{"completed", "cancelled"} {
		gate := filepath.Join(dir, end)
		res := alice.must("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate}, "task": map[string]any{}})
		if err := json.Unmarshal(res, &created); err != nil || created.Task.TaskID == "" {
			t.Fatalf("tools/call as a task: %s", res)
		}
		testproc.WaitFor(t, "the upstream call to start", 10*time.Second, func() bool {
			_, err := os.Stat(gate + ".started")
			return err == nil
		})
		if end == "completed" {
			if err := os.WriteFile(gate, []byte("done"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			alice.must("tasks/cancel", map[string]any{"taskId": created.Task.TaskID})
		}
		if got := nextStatus(t, events); got.TaskID != created.Task.TaskID || got.Status != end {
			t.Errorf("status notification: %+v, want %s of %s", got, end, created.Task.TaskID)
		}
	}
}

// taskOutcome waits on c's task id and returns its result's text.
func taskOutcome(t *testing.T, c *rpcClient, res json.RawMessage) string {
	t.Helper()
	var created struct{ Task wireTask }
	if err := json.Unmarshal(res, &created); err != nil || !strings.HasPrefix(created.Task.TaskID, "mcpt1.") {
		t.Fatalf("a task-mode call: %s", res)
	}
	var out struct {
		Content []struct{ Text string }
		IsError bool
	}
	raw := c.must("tasks/result", map[string]any{"taskId": created.Task.TaskID})
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Content) == 0 || out.IsError {
		t.Fatalf("tasks/result: %s", raw)
	}
	return out.Content[0].Text
}

// TestTasksOfExposedTools: under tools.exposure = "search", call_tool in
// task mode runs the tool it names as a task (the call outlives its
// request), and search_tools runs as one; under "code", run_code runs
// its script as a task.
func TestTasksOfExposedTools(t *testing.T) {
	for _, exposure := range []string{"search", "code"} {
		t.Run(exposure, func(t *testing.T) {
			cfg := writeConfig(t, `
tools {
  exposure = "`+exposure+`"
}
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
}
`)
			addr := testproc.FreeAddr(t)
			startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg, "--http", addr)
			c, _ := taskClient(t, addr, "")
			gate := filepath.Join(t.TempDir(), "gate")
			call := map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate}}, "task": map[string]any{}}
			if exposure == "code" {
				call = map[string]any{"name": "run_code", "arguments": map[string]any{"code": `return tools.up__wait_file({text: ` + strconv.Quote(gate) + `})`}, "task": map[string]any{}}
			}
			res := c.must("tools/call", call) // answered while the tool waits
			testproc.WaitFor(t, "the upstream call to start", 10*time.Second, func() bool {
				_, err := os.Stat(gate + ".started")
				return err == nil
			})
			if err := os.WriteFile(gate, []byte("through "+exposure), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := taskOutcome(t, c, res); !strings.Contains(got, "through "+exposure) {
				t.Errorf("the task's result: %q", got)
			}
			if exposure == "search" {
				res = c.must("tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "wait until a file exists"}, "task": map[string]any{}})
				if got := taskOutcome(t, c, res); !strings.Contains(got, "up__wait_file") {
					t.Errorf("search_tools as a task: %q", got)
				}
			}
		})
	}
}

// TestTaskInputRequired: while the call of a task mcphost runs asks the
// client something (here sampling, which reaches the client on its event
// stream), the task is input_required, and its session is told so; once
// answered it works again, then completes with the answer.
func TestTaskInputRequired(t *testing.T) {
	addr := serveTasks(t)
	c := &rpcClient{t: t, url: "http://" + addr + "/mcp", key: aliceKey}
	c.must("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"sampling": map[string]any{}},
		"clientInfo": map[string]any{"name": "tasks-test", "version": "1"}})
	c.post("notifications/initialized", nil, true)
	events, code := c.openEvents(c.session)
	if code != http.StatusOK {
		t.Fatalf("GET /mcp: HTTP %d", code)
	}
	var created struct{ Task wireTask }
	json.Unmarshal(c.must("tools/call", map[string]any{"name": "up__sample", "arguments": map[string]any{"text": "a question"}, "task": map[string]any{}}), &created)
	id := created.Task.TaskID
	var asked struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var statuses []string
	timeout := time.After(20 * time.Second)
	for asked.Method != "sampling/createMessage" || len(statuses) == 0 {
		select {
		case m := <-events:
			var n struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params wireTask        `json:"params"`
			}
			json.Unmarshal(m, &n)
			switch n.Method {
			case "sampling/createMessage":
				asked.ID, asked.Method = n.ID, n.Method
			case "notifications/tasks/status":
				if n.Params.TaskID != id {
					t.Fatalf("a status of another task: %s", m)
				}
				statuses = append(statuses, n.Params.Status)
			}
		case <-timeout:
			t.Fatalf("no question and input_required in 20 s (statuses %v)", statuses)
		}
	}
	var got wireTask
	json.Unmarshal(c.must("tasks/get", map[string]any{"taskId": id}), &got)
	if statuses[0] != "input_required" || got.Status != "input_required" {
		t.Fatalf("while the client is asked: notified %v, tasks/get %q", statuses, got.Status)
	}
	answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": asked.ID,
		"result": map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "the answer"}}})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(answer))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, want := range []string{"working", "completed"} {
		if got := nextStatus(t, events); got.TaskID != id || got.Status != want {
			t.Errorf("after the answer: %+v, want %s", got, want)
		}
	}
	if out := c.must("tasks/result", map[string]any{"taskId": id}); !strings.Contains(string(out), "the answer") {
		t.Errorf("tasks/result: %s", out)
	}
}
