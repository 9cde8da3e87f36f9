package security

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// extCall sends one protocol 2026-07-28 request of a client of the tasks
// extension with key and returns its result or error.
func extCall(t *testing.T, url, key, method string, params map[string]any) (map[string]any, *taskRPCError) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "attacker", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	} else if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Result map[string]any `json:"result"`
			Error  *taskRPCError  `json:"error"`
		}
		if json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "data: ")), &r) == nil && (r.Result != nil || r.Error != nil) {
			return r.Result, r.Error
		}
	}
	t.Fatalf("%s: no answer (HTTP %d)", method, resp.StatusCode)
	return nil, nil
}

// TestTaskQuestionsAnsweredOnlyByTheirCaller: what a server asks inside
// alice's task of the extension (2026-07-28) is hers alone: bob, with her
// task id, with it altered or made up, can neither read the question
// (tasks/get) nor answer it (tasks/update), and her task still waits for
// her answer afterwards.
func TestTaskQuestionsAnsweredOnlyByTheirCaller(t *testing.T) {
	cfg := strings.Replace(twoKeys(""), `command = "UPSTREAM"`, `command = "UPSTREAM"
  args    = ["-secrets"]`, 1) // the tool elicit
	srv := startServer(t, writeConfig(t, "", cfg))
	url := srv.URL + "/mcp"
	created, e := extCall(t, url, callerAliceKey, "tools/call", map[string]any{"name": "up__elicit", "arguments": map[string]any{"text": "alice's question"}})
	id, _ := created["taskId"].(string)
	if e != nil || id == "" {
		t.Fatalf("alice's call that asks did not become a task: %v %+v", created, e)
	}
	var got map[string]any
	for deadline := time.Now().Add(15 * time.Second); got["status"] != "input_required"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("alice's task never asked: %v", got)
		}
		got, _ = extCall(t, url, callerAliceKey, "tasks/get", map[string]any{"taskId": id})
	}
	answers := map[string]any{}
	for k := range got["inputRequests"].(map[string]any) {
		answers[k] = map[string]any{"action": "decline"}
	}
	for _, f := range []string{id, id[:len(id)-2] + "AA", "mcpt1..AAAA..AAAAAAAAAAAAAAAAAAAAAAAA"} {
		for _, m := range []string{"tasks/get", "tasks/update"} {
			r, e := extCall(t, url, callerBobKey, m, map[string]any{"taskId": f, "inputResponses": answers})
			if e == nil || e.Code != -32602 || strings.Contains(mustMarshal(r), "alice's question") {
				t.Errorf("bob's %s of %q: %v %+v, want -32602", m, f, r, e)
			}
		}
	}
	if got, _ = extCall(t, url, callerAliceKey, "tasks/get", map[string]any{"taskId": id}); got["status"] != "input_required" || len(got["inputRequests"].(map[string]any)) != 1 {
		t.Errorf("alice's question after bob's attempts: %v", got)
	}
	extCall(t, url, callerAliceKey, "tasks/cancel", map[string]any{"taskId": id})
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
