package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// tsSDK is the TypeScript SDK whose task example server and client the
// tests run (its examples are in the npm package).
const tsSDK = "@modelcontextprotocol/sdk@1.32.2"

// installTSSDK installs tsSDK once per machine under the temp dir and
// returns its examples directory. Without npm, or when the registry cannot
// be reached, the test is skipped, except under CI, which has both.
func installTSSDK(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the TypeScript SDK")
	}
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	if _, err := exec.LookPath("npm"); err != nil {
		skip("npm is not installed: the TypeScript SDK's task example needs it")
	}
	dir := filepath.Join(os.TempDir(), "mcphost-test-npm", strings.NewReplacer("@", "", "/", "-").Replace(tsSDK))
	examples := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples")
	if _, err := os.Stat(filepath.Join(examples, "server", "simpleTaskInteractive.js")); err == nil {
		return examples
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, tsSDK).CombinedOutput()
	if err != nil {
		skip("npm install %s failed (is the registry reachable?): %v\n%s", tsSDK, err, out)
	}
	return examples
}

// runTaskClient runs the SDK's simpleTaskInteractiveClient against url,
// answering its y/n question with y, and returns what it printed.
func runTaskClient(t *testing.T, examples, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(examples, "client", "simpleTaskInteractiveClient.js"), "--url", url)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	var out strings.Builder
	buf := make([]byte, 4096)
	answered := 0
	for {
		n, err := pr.Read(buf)
		out.Write(buf[:n])
		// The prompt ends without a newline: it is answered as it comes.
		if strings.Count(out.String(), "Your response (y/n):") > answered {
			answered++
			io.WriteString(stdin, "y\n")
		}
		if err != nil {
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("the task client: %v\n%s", err, out.String())
	}
	return out.String()
}

// TestTasksTypeScriptSDKExample: the TypeScript SDK's own task example
// server (simpleTaskInteractive: tools that run only as tasks, one asking
// the client by elicitation, one by sampling, from inside the task) behind
// mcphost, driven by the SDK's own task client, gives what it gives direct.
func TestTasksTypeScriptSDKExample(t *testing.T) {
	examples := installTSSDK(t)
	upAddr := testproc.FreeAddr(t)
	_, port, _ := net.SplitHostPort(upAddr)
	server := exec.Command("node", filepath.Join(examples, "server", "simpleTaskInteractive.js"))
	server.Env = append(os.Environ(), "PORT="+port)
	serverLog := &testproc.Buffer{}
	server.Stdout, server.Stderr = serverLog, serverLog
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	testproc.WaitFor(t, "the example server to listen", 30*time.Second, func() bool {
		c, err := net.Dial("tcp", upAddr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	cfg := writeConfig(t, `
tools {
  prefix = "never" # the example client calls the tools by their own names
}
server "tasks" {
  transport = "streamable-http"
  url       = "http://`+upAddr+`/mcp"
}
`)
	addr := testproc.FreeAddr(t)
	cmd := exec.Command(mcphostBin, "run", cfg, "--http", addr)
	logs := &testproc.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testproc.WaitFor(t, "mcphost to connect the example server", 30*time.Second, func() bool {
		return strings.Contains(logs.String(), "upstream ready: server=tasks")
	})

	want := []string{
		"Available tools: confirm_delete, write_haiku",
		"[Elicitation] Server asks: Are you sure you want to delete 'important.txt'?",
		"Result: Deleted 'important.txt'",
		"[Sampling] Server requests LLM completion for: Write a haiku about autumn leaves",
		"Haiku:\nCherry blossoms fall",
		"Demo complete.",
	}
	for _, target := range []struct{ name, url string }{{"direct", "http://" + upAddr + "/mcp"}, {"through mcphost", "http://" + addr + "/mcp"}} {
		out := runTaskClient(t, examples, target.url)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the client's output lacks %q:\n%s\nmcphost:\n%s", target.name, w, out, logs.String())
			}
		}
		if strings.Contains(out, "Error") {
			t.Errorf("%s: the client reports an error:\n%s", target.name, out)
		}
	}

	// The server's tools say they run only as tasks (execution.taskSupport
	// "required"); mcphost lists that as the server does, and answers a
	// call made without a task with the error MCP asks of the server,
	// -32601, not a result.
	for _, target := range []string{upAddr, addr} {
		c, _ := taskClient(t, target, "")
		got := listedExecutions(t, c.must("tools/list", nil))
		for _, name := range []string{"confirm_delete", "write_haiku"} {
			if got[name] != `{"taskSupport":"required"}` {
				t.Errorf("%s: tool %s lists execution %q, want required (%v)", target, name, got[name], got)
			}
		}
	}
	plain, _ := taskClient(t, addr, "")
	if res, rerr := plain.post("tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "x.txt"}}, false); rerr == nil || rerr.Code != -32601 {
		t.Errorf("a call without a task of a tool that requires one: %s, %+v; want error -32601", res, rerr)
	}
	// Protocol 2026-07-28 has no such member; a client without the tasks
	// extension is told, by the extension's error, that it needs it.
	noExt := &extClient{t: t, url: "http://" + addr + "/mcp"}
	if l := noExt.result("tools/list", nil); strings.Contains(mustJSON(l), "execution") {
		t.Errorf("a 2026-07-28 listing with execution: %s", mustJSON(l))
	}
	if r := noExt.send("tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "x.txt"}}); rpcCode(r) != -32021 || !strings.Contains(mustJSON(r.Error), "io.modelcontextprotocol/tasks") {
		t.Errorf("a 2026-07-28 call without the extension of a tool that requires tasks: %s, %s", r.Result, mustJSON(r.Error))
	}

	// A 2026-07-28 client of the tasks extension, against this 2025-11-25
	// task server: mcphost asks it for a task and waits on its result. The
	// tool's question (elicitation) reaches the client as the task's
	// inputRequests, its tasks/update answers it, and the task completes.
	ext := &extClient{t: t, url: "http://" + addr + "/mcp", ext: true}
	r := ext.result("tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "x.txt"}})
	id, _ := r["taskId"].(string)
	if r["resultType"] != "task" || id == "" {
		t.Fatalf("a 2026-07-28 client's call of a tool that asks did not become a task: %v", r)
	}
	testproc.WaitFor(t, "the question", 30*time.Second, func() bool {
		r = ext.result("tasks/get", map[string]any{"taskId": id})
		return r["status"] == "input_required" || (r["status"] != "working")
	})
	reqs, _ := r["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("the question of the server's task: %v\nmcphost:\n%s\nserver:\n%s", r, logs.String(), serverLog.String())
	}
	answers := map[string]any{}
	for k := range reqs {
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
	}
	ext.result("tasks/update", map[string]any{"taskId": id, "inputResponses": answers})
	testproc.WaitFor(t, "the task to end", 30*time.Second, func() bool {
		r = ext.result("tasks/get", map[string]any{"taskId": id})
		return r["status"] != "working" && r["status"] != "input_required"
	})
	t.Logf("2026-07-28 client, 2025-11-25 task server: %s", mustJSON(r))
	if res, _ := r["result"].(map[string]any); r["status"] != "completed" || res == nil || res["isError"] == true || strings.Contains(mustJSON(res), "related-task") {
		t.Errorf("a 2026-07-28 client's call of a tool that asks, answered: %v\nmcphost:\n%s\nserver:\n%s", r, logs.String(), serverLog.String())
	}
}

// TestTaskStatusFromUpstream: the TypeScript SDK's example server
// (simpleStreamableHttp: its delay tool runs as a task, and the SDK sends
// notifications/tasks/status as the task's store changes) behind mcphost:
// the server's status notification reaches the session whose task it is,
// under mcphost's id of the task, and not another identity's session.
// Bob's stream is read until his own task's notification, so had alice's
// been sent there, it would have come first.
func TestTaskStatusFromUpstream(t *testing.T) {
	examples := installTSSDK(t)
	upAddr := testproc.FreeAddr(t)
	_, port, _ := net.SplitHostPort(upAddr)
	server := exec.Command("node", filepath.Join(examples, "server", "simpleStreamableHttp.js"))
	server.Env = append(os.Environ(), "MCP_PORT="+port)
	serverLog := &testproc.Buffer{}
	server.Stdout, server.Stderr = serverLog, serverLog
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	testproc.WaitFor(t, "the example server to listen", 30*time.Second, func() bool {
		c, err := net.Dial("tcp", upAddr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
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
server "ts" {
  transport = "streamable-http"
  url       = "http://`+upAddr+`/mcp"
}
`)
	addr := testproc.FreeAddr(t)
	startMcphost(t, "http://"+addr+"/healthz", 30*time.Second, "run", cfg, "--http", addr)

	alice, _ := taskClient(t, addr, aliceKey)
	bob, _ := taskClient(t, addr, bobKey)
	aliceEvents, code := alice.openEvents(alice.session)
	if code != http.StatusOK {
		t.Fatalf("alice's GET /mcp: HTTP %d", code)
	}
	bobEvents, _ := bob.openEvents(bob.session)
	for _, c := range []struct {
		who    *rpcClient
		events <-chan json.RawMessage
	}{{alice, aliceEvents}, {bob, bobEvents}} {
		var created struct{ Task wireTask }
		res := c.who.must("tools/call", map[string]any{"name": "ts__delay", "arguments": map[string]any{"duration": 200}, "task": map[string]any{}})
		if err := json.Unmarshal(res, &created); err != nil || !strings.HasPrefix(created.Task.TaskID, "mcpt1.") {
			t.Fatalf("tools/call of delay as a task: %s", res)
		}
		got := nextStatus(t, c.events)
		if got.TaskID != created.Task.TaskID || got.Status != "completed" {
			t.Errorf("%s's first status notification: %+v, want the completion of %s\nserver:\n%s", c.who.key[:4], got, created.Task.TaskID, serverLog.String())
		}
	}
}
