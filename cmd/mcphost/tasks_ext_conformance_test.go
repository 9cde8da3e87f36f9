package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTasksExtension2026Conformance: what the conformance suite's task
// scenarios (.ci/conformance-tasks.sh) found mcphost did otherwise than
// the go-sdk's server or the extension asks: a protocol 2026-07-28 result
// carries resultType "complete" for a client without the extension too;
// tasks/get, tasks/update and tasks/cancel from a request that does not
// declare the extension are refused with -32021 and the capability it
// needs; and the requests mcphost serves itself have their Mcp-Method and
// Mcp-Name headers checked, as the go-sdk checks those it serves (-32020,
// HTTP 400).
func TestTasksExtension2026Conformance(t *testing.T) {
	addr := serveTasks(t)
	url := "http://" + addr + "/mcp"
	alice := &extClient{t: t, url: url, key: aliceKey, ext: true}
	plain := &extClient{t: t, url: url, key: aliceKey}

	if r := plain.result("tools/call", map[string]any{"name": "up__echo", "arguments": map[string]any{"text": "hi"}}); r["resultType"] != "complete" {
		t.Errorf("a 2026-07-28 tools/call's result without resultType \"complete\": %v", r)
	}

	created := alice.result("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": filepath.Join(t.TempDir(), "gate")}})
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("a long call did not become a task: %v", created)
	}
	defer alice.result("tasks/cancel", map[string]any{"taskId": id})

	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		r := plain.send(m, map[string]any{"taskId": id, "inputResponses": map[string]any{}})
		var rerr *jsonrpc.Error
		if r.Error == nil || !asRPCError(r.Error, &rerr) || rerr.Code != mcp.CodeMissingRequiredClientCapabilities {
			t.Errorf("%s without the extension: %s %v, want error %d", m, r.Result, r.Error, mcp.CodeMissingRequiredClientCapabilities)
			continue
		}
		var data mcp.MissingRequiredClientCapabilityData
		if err := json.Unmarshal(rerr.Data, &data); err != nil || data.RequiredCapabilities == nil ||
			data.RequiredCapabilities.Extensions["io.modelcontextprotocol/tasks"] == nil {
			t.Errorf("%s without the extension: the error's data %s does not name the extension", m, rerr.Data)
		}
	}
	if got := alice.result("tasks/get", map[string]any{"taskId": id}); got["status"] != "working" {
		t.Errorf("the refused requests changed the task: %v", got)
	}

	for _, tc := range []struct {
		what, method string
		params       map[string]any
		headers      map[string]string
	}{
		{"tasks/get naming another task", "tasks/get", map[string]any{"taskId": id}, map[string]string{"Mcp-Name": id + "x"}},
		{"tasks/cancel without Mcp-Name", "tasks/cancel", map[string]any{"taskId": id}, map[string]string{"Mcp-Name": ""}},
		{"tools/call saying it is tasks/get", "tools/call", map[string]any{"name": "up__echo", "arguments": map[string]any{"text": "x"}},
			map[string]string{"Mcp-Method": "tasks/get"}},
		{"tools/call naming another tool", "tools/call", map[string]any{"name": "up__echo", "arguments": map[string]any{"text": "x"}},
			map[string]string{"Mcp-Name": "up__wait_file"}},
	} {
		status, body := postExtension(t, url, tc.method, tc.params, tc.headers)
		if status != http.StatusBadRequest || !strings.Contains(body, `"code":-32020`) {
			t.Errorf("%s: %d %s, want 400 and error -32020", tc.what, status, body)
		}
	}
	if got := alice.result("tasks/get", map[string]any{"taskId": id}); got["status"] != "working" {
		t.Errorf("a refused tasks/cancel cancelled the task: %v", got)
	}
}

// postExtension posts one request of a client of the extension with the
// headers extClient sends, changed by headers (a value "" removes one),
// and returns the HTTP status and body.
func postExtension(t *testing.T, url, method string, params map[string]any, headers map[string]string) (int, string) {
	t.Helper()
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    "2026-07-28",
		mcp.MetaKeyClientInfo:         map[string]any{"name": "ext-test", "version": "1"},
		mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	raw, _ := json.Marshal(params)
	id, _ := jsonrpc.MakeID(float64(1))
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: method, Params: raw})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if tid, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", tid)
	} else if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}
