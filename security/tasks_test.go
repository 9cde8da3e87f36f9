package security

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// taskSession is a 2025-11-25 streamable HTTP session on net/http, to send
// the tasks methods the go-sdk's client does not know.
type taskSession struct {
	t        *testing.T
	url, key string
	sid      string
	n        int
}

type taskRPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (s *taskSession) call(method string, params any) (json.RawMessage, *taskRPCError) {
	s.t.Helper()
	s.n++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.n, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.key)
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if v := resp.Header.Get("Mcp-Session-Id"); v != "" {
		s.sid = v
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *taskRPCError   `json:"error"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.ID == s.n && (r.Result != nil || r.Error != nil) {
			return r.Result, r.Error
		}
	}
	s.t.Fatalf("%s: no answer (HTTP %d)", method, resp.StatusCode)
	return nil, nil
}

func openTaskSession(t *testing.T, base, key string) *taskSession {
	s := &taskSession{t: t, url: base + "/mcp", key: key}
	if _, e := s.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "attacker", "version": "1"}}); e != nil {
		t.Fatalf("initialize: %+v", e)
	}
	body := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Mcp-Session-Id", s.sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return s
}

// TestTaskAttacks: asking for a task is no way around a policy (the call
// is refused as a plain call, and no task exists), and a task id is worth
// nothing to anyone but the caller it was made for: not to another
// identity, not altered, not with another caller's id made up.
func TestTaskAttacks(t *testing.T) {
	srv := startServer(t, writeConfig(t, "", twoKeys("")+`
plugin "no-echo-for-bob" {
  source  = "builtin:deny"
  callers = ["bob"]
  config  = { tools = "up__echo" }
}
`))
	alice, bob := openTaskSession(t, srv.URL, callerAliceKey), openTaskSession(t, srv.URL, callerBobKey)

	// Bob asks for a denied tool as a task: refused as the plain call is.
	res, e := bob.call("tools/call", map[string]any{"name": "up__echo", "arguments": map[string]any{"text": "x"}, "task": map[string]any{}})
	if e != nil || strings.Contains(string(res), `"task"`) || !strings.Contains(string(res), `"isError":true`) {
		t.Errorf("a denied call in task mode: %s %+v", res, e)
	}
	if l, _ := bob.call("tasks/list", nil); strings.Contains(string(l), "mcpt1.") {
		t.Errorf("the denied call left a task: %s", l)
	}

	gate := filepath.Join(t.TempDir(), "gate")
	res, e = alice.call("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate}, "task": map[string]any{}})
	var created struct{ Task struct{ TaskID string } }
	if json.Unmarshal(res, &created); e != nil || created.Task.TaskID == "" {
		t.Fatalf("alice's task: %s %+v", res, e)
	}
	id := created.Task.TaskID
	parts := strings.Split(id, ".")
	forged := []string{
		id,                    // alice's own id, sent by bob
		id[:len(id)-2] + "AA", // its MAC altered
		strings.Join(append(parts[:4:4], ""), "."), // no MAC
		"mcpt1..AAAA..AAAAAAAAAAAAAAAAAAAAAAAA",    // a made-up one
		parts[2],                                   // the Runner's own id, bare
	}
	for _, f := range forged {
		for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			if _, e := bob.call(m, map[string]any{"taskId": f}); e == nil || e.Code != -32602 {
				t.Errorf("bob's %s of %q: %+v, want -32602", m, f, e)
			}
		}
	}
	if l, _ := bob.call("tasks/list", nil); strings.Contains(string(l), id) {
		t.Errorf("bob lists alice's task: %s", l)
	}
	// Alice's task is untouched by all that.
	if err := os.WriteFile(gate, []byte("alice's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, e := alice.call("tasks/result", map[string]any{"taskId": id}); e != nil || !strings.Contains(string(res), "alice's") {
		t.Errorf("alice's result after bob's attempts: %s %+v", res, e)
	}
}

// events opens a standalone event stream (GET /mcp) of session sid with
// key and returns its HTTP status and the messages read from it.
func taskEvents(t *testing.T, url, key, sid string) (int, <-chan string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	msgs := make(chan string, 16)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs <- data
			}
		}
	}()
	return resp.StatusCode, msgs
}

// firstStatus returns the first notifications/tasks/status read from msgs.
func firstStatus(t *testing.T, msgs <-chan string) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return ""
			}
			if strings.Contains(m, `"notifications/tasks/status"`) {
				return m
			}
		case <-timeout:
			t.Fatal("no notifications/tasks/status in 20 s")
		}
	}
}

// TestTaskStatusReachesOnlyItsSession: the status notifications of
// alice's task reach her session's event stream only: not bob's session,
// and not bob opening alice's session's stream with his own key (refused).
// Bob's stream is read until his own task's notification, so had alice's
// been sent there, it would have come first.
func TestTaskStatusReachesOnlyItsSession(t *testing.T) {
	srv := startServer(t, writeConfig(t, "", twoKeys("")))
	alice, bob := openTaskSession(t, srv.URL, callerAliceKey), openTaskSession(t, srv.URL, callerBobKey)
	code, aliceEvents := taskEvents(t, alice.url, alice.key, alice.sid)
	if code != http.StatusOK {
		t.Fatalf("alice's GET /mcp: HTTP %d", code)
	}
	_, bobEvents := taskEvents(t, bob.url, bob.key, bob.sid)
	if code, stolen := taskEvents(t, bob.url, bob.key, alice.sid); code == http.StatusOK {
		t.Errorf("bob opened alice's session's event stream with his key")
		go func() {
			for m := range stolen {
				if strings.Contains(m, "tasks/status") {
					t.Errorf("bob read alice's task status: %s", m)
				}
			}
		}()
	}

	dir := t.TempDir()
	run := func(s *taskSession, events <-chan string, who string) {
		gate := filepath.Join(dir, who)
		res, e := s.call("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate}, "task": map[string]any{}})
		var created struct{ Task struct{ TaskID string } }
		if json.Unmarshal(res, &created); e != nil || created.Task.TaskID == "" {
			t.Fatalf("%s's task: %s %+v", who, res, e)
		}
		if err := os.WriteFile(gate, []byte(who), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := firstStatus(t, events); !strings.Contains(got, created.Task.TaskID) || !strings.Contains(got, `"completed"`) {
			t.Errorf("%s's first status notification: %s, want his own task's (%s) completion", who, got, created.Task.TaskID)
		}
	}
	run(alice, aliceEvents, "alice")
	run(bob, bobEvents, "bob")
}
