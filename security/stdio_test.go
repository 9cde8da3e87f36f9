package security

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestStdioClientClosesInput is what the Python SDK's stdio client does at
// exit: close mcphost's stdin and kill it 2 s later if it is still running.
// Requests written before the close are answered, and mcphost exits on its
// own before the kill with the upstream and its children gone, though the
// upstream, as many servers do, keeps running when its own stdin closes.
func TestStdioClientClosesInput(t *testing.T) {
	if raceEnabled {
		t.Skip("a 2 s wall-clock deadline, as the Python SDK's, does not hold under the race detector")
	}
	cfg := writeConfig(t, "", `
server "up" {
  command = "UPSTREAM"
  args    = ["-linger"]
}
`)
	p := startStdio(t, cfg)
	out := bufio.NewScanner(p.stdout)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	result := func(id int) string {
		t.Helper()
		for out.Scan() {
			var r struct {
				ID     int
				Result struct{ Content []struct{ Text string } }
			}
			if json.Unmarshal(out.Bytes(), &r) == nil && r.ID == id {
				if len(r.Result.Content) > 0 {
					return r.Result.Content[0].Text
				}
				return out.Text()
			}
		}
		t.Fatalf("no answer to request %d", id)
		return ""
	}
	call := func(id int, tool, args string) {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":%s}}`, id, tool, args))
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"python-like","version":"1"}}}`)
	result(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	pids := spawned{}
	for id, tool := range map[int]string{2: "pid", 3: "spawn_child"} {
		call(id, tool, `{}`)
		pid, err := strconv.Atoi(result(id))
		if err != nil {
			t.Fatal(err)
		}
		pids[tool] = pid
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	call(4, "sleep", `{"millis":300}`)
	p.stdin.Close()
	closed := time.Now()
	if got := result(4); got == "" {
		t.Fatalf("the call in flight at the close: %q", got)
	}
	select {
	case <-p.exited:
		t.Logf("mcphost exited %v after its stdin closed (with a 300 ms call in flight)", time.Since(closed).Round(time.Millisecond))
	case <-time.After(2*time.Second - time.Since(closed)):
		t.Errorf("mcphost still running 2 s after its stdin closed, when the Python SDK kills it")
		p.cmd.Process.Kill()
	}
	waitGone(t, "after the client closed stdin", pids, "pid", "spawn_child")
}
