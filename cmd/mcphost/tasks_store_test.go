package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/pgtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// taskReplica is one `mcphost run` of the tasks-in-the-store tests.
type taskReplica struct {
	addr string
	cmd  *exec.Cmd
	logs *testproc.Buffer
}

// startTaskReplica runs mcphost with alice's and bob's keys, the test
// upstream behind builtin:redact, and the store storeLine, on addr (a
// free one when empty).
func startTaskReplica(t *testing.T, storeLine, addr string) *taskReplica {
	t.Helper()
	cfg := writeConfig(t, `
listen {
  drain_timeout = "1s"
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
store {
  `+storeLine+`
  key  = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
}
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up", "-secrets"] # -secrets: the tool elicit
}
plugin "redact" {
  source = "builtin:redact"
}
`)
	if addr == "" {
		addr = testproc.FreeAddr(t)
	}
	r := &taskReplica{addr: addr, cmd: exec.Command(mcphostBin, "run", cfg, "--http", addr), logs: &testproc.Buffer{}}
	r.cmd.Stderr = r.logs
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		if t.Failed() {
			t.Logf("mcphost at %s:\n%s", r.addr, r.logs)
		}
	})
	testproc.WaitFor(t, "mcphost to serve", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	return r
}

// stop ends r with sig and waits for it.
func (r *taskReplica) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	r.cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("mcphost at %s did not stop on %v", r.addr, sig)
	}
}

// startWaitTask has c call up__wait_file on a new gate in dir as a task,
// waits until the upstream call started, and returns the task's id and
// the gate.
func startWaitTask(t *testing.T, c *rpcClient, dir, name string) (string, string) {
	t.Helper()
	gate := filepath.Join(dir, name)
	var created struct{ Task wireTask }
	res := c.must("tools/call", map[string]any{"name": "up__wait_file", "arguments": map[string]any{"text": gate}, "task": map[string]any{"ttl": 600000}})
	if err := json.Unmarshal(res, &created); err != nil || created.Task.TaskID == "" || created.Task.Status != "working" {
		t.Fatalf("tools/call as a task: %s", res)
	}
	testproc.WaitFor(t, "the upstream call to start", 10*time.Second, func() bool {
		_, err := os.Stat(gate + ".started")
		return err == nil
	})
	return created.Task.TaskID, gate
}

// storeTaskClient is taskClient once mcphost answers the session's task
// requests: it knows a session from the client's notifications/initialized,
// which the go-sdk hands on after answering the POST that carried it.
func storeTaskClient(t *testing.T, addr, key string) *rpcClient {
	t.Helper()
	c, _ := taskClient(t, addr, key)
	testproc.WaitFor(t, "mcphost to know the session", 10*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(`{"jsonrpc":"2.0","id":"probe","method":"tasks/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return c
}

type storedTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
}

// waitStatus polls tasks/get of id on c until it has status.
func waitStatus(t *testing.T, c *rpcClient, id, status string, within time.Duration) storedTask {
	t.Helper()
	var got storedTask
	testproc.WaitFor(t, "task "+id+" to be "+status, within, func() bool {
		got = storedTask{}
		json.Unmarshal(c.must("tasks/get", map[string]any{"taskId": id}), &got)
		return got.Status == status
	})
	return got
}

// TestTasksInTheStore: with a store, the tasks mcphost runs outlive the
// session and the process that started them. On PostgreSQL with two
// replicas, a task started on one is read, listed, fetched and cancelled
// through the other by its owner on a new session, and by no one else;
// a replica killed with a call in flight has that task failed, with the
// reason, once its lease runs out. On SQLite, one process restarted: a
// finished task's result is still there, and a task in flight when it
// stopped failed.
func TestTasksInTheStore(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		storeLine := fmt.Sprintf("postgres = %q\n  poll = \"200ms\"", pgtest.NewDatabase(t))
		a := startTaskReplica(t, storeLine, "")
		b := startTaskReplica(t, storeLine, "")
		dir := t.TempDir()

		aliceA := storeTaskClient(t, a.addr, aliceKey)
		id, gate := startWaitTask(t, aliceA, dir, "gate")

		// Alice reconnects, to the other replica.
		aliceB := storeTaskClient(t, b.addr, aliceKey)
		if aliceB.session == aliceA.session {
			t.Fatal("the reconnect reused the session")
		}
		var got storedTask
		json.Unmarshal(aliceB.must("tasks/get", map[string]any{"taskId": id}), &got)
		if got.TaskID != id || got.Status != "working" {
			t.Fatalf("tasks/get on the other replica: %+v", got)
		}
		if l := aliceB.must("tasks/list", nil); !strings.Contains(string(l), id) {
			t.Fatalf("tasks/list on the other replica lacks the task: %s", l)
		}
		bobB := storeTaskClient(t, b.addr, bobKey)
		for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			if _, rerr := bobB.post(m, map[string]any{"taskId": id}, false); rerr == nil || rerr.Code != -32602 {
				t.Errorf("bob's %s of alice's task: %+v, want -32602", m, rerr)
			}
		}
		if l := bobB.must("tasks/list", nil); strings.Contains(string(l), id) {
			t.Errorf("bob's tasks/list shows alice's task: %s", l)
		}

		// The result, redacted where the call ran, is fetched on B.
		if err := os.WriteFile(gate, []byte("deploy token "+auditToken), 0o644); err != nil {
			t.Fatal(err)
		}
		out := aliceB.must("tasks/result", map[string]any{"taskId": id})
		if strings.Contains(string(out), auditToken) || !strings.Contains(string(out), "REDACTED") || !strings.Contains(string(out), id) {
			t.Fatalf("tasks/result on the other replica: %s", out)
		}

		// A cancel on B reaches the call on A.
		id2, gate2 := startWaitTask(t, aliceA, dir, "gate2")
		json.Unmarshal(aliceB.must("tasks/cancel", map[string]any{"taskId": id2}), &got)
		if got.Status != "cancelled" {
			t.Fatalf("tasks/cancel on the other replica: %+v", got)
		}
		testproc.WaitFor(t, "the cancel on B to reach the upstream call on A", 10*time.Second, func() bool {
			_, err := os.Stat(gate2 + ".cancelled")
			return err == nil
		})
		waitStatus(t, aliceA, id2, "cancelled", 5*time.Second)

		// A 2026-07-28 task's question is held where its call runs: an
		// answer sent to B is refused there, saying where it goes; A's
		// takes.
		extA := &extClient{t: t, url: "http://" + a.addr + "/mcp", key: aliceKey, ext: true}
		extB := &extClient{t: t, url: "http://" + b.addr + "/mcp", key: aliceKey, ext: true}
		created := extA.result("tools/call", map[string]any{"name": "up__elicit", "arguments": map[string]any{"text": "q"}})
		id4, _ := created["taskId"].(string)
		var asked map[string]any
		testproc.WaitFor(t, "the question on A", 10*time.Second, func() bool {
			asked = extA.result("tasks/get", map[string]any{"taskId": id4})
			return asked["status"] == "input_required"
		})
		answers := map[string]any{}
		for k := range asked["inputRequests"].(map[string]any) {
			answers[k] = map[string]any{"action": "decline"}
		}
		if r := extB.send("tasks/update", map[string]any{"taskId": id4, "inputResponses": answers}); r.Error == nil || !strings.Contains(r.Error.Error(), "another replica") {
			t.Errorf("tasks/update on the replica that does not run the task: %s %v", r.Result, r.Error)
		}
		extA.result("tasks/update", map[string]any{"taskId": id4, "inputResponses": answers})
		testproc.WaitFor(t, "the answered task to complete", 10*time.Second, func() bool {
			asked = extA.result("tasks/get", map[string]any{"taskId": id4})
			return asked["status"] == "completed" && strings.Contains(mustJSON(asked["result"]), "decline")
		})

		// A dies with a call in flight: B fails the task once A's lease
		// has run out.
		id3, _ := startWaitTask(t, aliceA, dir, "gate3")
		a.stop(t, syscall.SIGKILL)
		got = waitStatus(t, aliceB, id3, "failed", 20*time.Second)
		if got.StatusMessage != "the replica running it stopped" {
			t.Fatalf("a killed replica's task: %+v", got)
		}
		if _, rerr := aliceB.post("tasks/result", map[string]any{"taskId": id3}, false); rerr == nil || !strings.Contains(rerr.Message, "the replica running it stopped") {
			t.Fatalf("a killed replica's task's result: %+v", rerr)
		}
	})

	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		storeLine := fmt.Sprintf("sqlite = %q", filepath.Join(dir, "state.db"))
		r := startTaskReplica(t, storeLine, "")
		alice := storeTaskClient(t, r.addr, aliceKey)
		done, gate := startWaitTask(t, alice, dir, "gate")
		if err := os.WriteFile(gate, []byte("finished before the restart"), 0o644); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, alice, done, "completed", 10*time.Second)
		inflight, _ := startWaitTask(t, alice, dir, "gate2")

		r.stop(t, syscall.SIGTERM)
		r = startTaskReplica(t, storeLine, r.addr)
		alice = storeTaskClient(t, r.addr, aliceKey)
		if out := alice.must("tasks/result", map[string]any{"taskId": done}); !strings.Contains(string(out), "finished before the restart") {
			t.Fatalf("tasks/result after a restart: %s", out)
		}
		got := waitStatus(t, alice, inflight, "failed", 5*time.Second)
		if got.StatusMessage != "the replica running it stopped" {
			t.Fatalf("a task in flight at the restart: %+v", got)
		}
		if l := alice.must("tasks/list", nil); !strings.Contains(string(l), done) || !strings.Contains(string(l), inflight) {
			t.Fatalf("tasks/list after a restart: %s", l)
		}
	})
}
