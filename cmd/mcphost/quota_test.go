package main

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestQuotasOverHTTP: mcphost run with quota blocks, real clients over
// HTTP. Once alice has spent her echoes the next is refused with the
// quota, the limit and when to retry, while bob's go through; with one
// sleep of hers in flight a second is refused; refusals are in /metrics.
func TestQuotasOverHTTP(t *testing.T) {
	cfg := writeConfig(t, twoUsers+`
quota "alice-echoes" {
  subjects = ["alice"]
  tools    = ["echo"]
  calls    = 2
  window   = "1h"
}
quota "one-sleep" {
  servers    = ["up"]
  tools      = ["sleep"]
  concurrent = 1
}
`)
	addr := testproc.FreeAddr(t)
	cmd := exec.Command(mcphostBin, "run", cfg, "--http", addr)
	cmd.Stderr = &testproc.Buffer{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testproc.WaitFor(t, "mcphost to serve", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	inFlight := make(chan struct{}, 1)
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		select {
		case inFlight <- struct{}{}:
		default:
		}
	}}
	connect := func(token string) *mcp.ClientSession { return connectKey(t, addr, token, opts) }
	call := func(cs *mcp.ClientSession, params *mcp.CallToolParams) (string, bool) {
		t.Helper()
		return callText(t, cs, params)
	}
	alice, alice2, bob := connect(aliceKey), connect(aliceKey), connect(bobKey)
	echo := &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "hi"}}
	for i := range 2 {
		if out, isErr := call(alice, echo); isErr {
			t.Fatalf("alice's echo %d: %s", i, out)
		}
	}
	out, isErr := call(alice2, echo) // her other session: the same identity, the same budget
	if !isErr || !strings.HasPrefix(out, `call to up__echo refused: quota "alice-echoes" allows 2 calls per 1h; retry in `) || !strings.HasSuffix(out, "s") {
		t.Errorf("alice's third echo: %q (isError %v)", out, isErr)
	}
	if out, isErr := call(bob, echo); isErr {
		t.Errorf("bob's echo: %s", out)
	}

	// One sleep of alice's in flight (its first progress says so): a
	// second, from her other session, is refused; once it ends, one fits.
	done := make(chan string, 1)
	go func() {
		out, _ := call(alice, &mcp.CallToolParams{Name: "up__sleep", Arguments: map[string]any{"millis": 1500, "steps": 3},
			Meta: mcp.Meta{"progressToken": "p1"}})
		done <- out
	}()
	select {
	case <-inFlight:
	case <-time.After(20 * time.Second):
		t.Fatal("the first sleep sent no progress")
	}
	sleep := &mcp.CallToolParams{Name: "up__sleep", Arguments: map[string]any{"millis": 1}}
	out, isErr = call(alice2, sleep)
	if !isErr || out != `call to up__sleep refused: quota "one-sleep" allows 1 calls at once; retry in 1s, once one of them has ended` {
		t.Errorf("a second sleep at once: %q (isError %v)", out, isErr)
	}
	if got := <-done; got != "slept" {
		t.Errorf("the first sleep: %q", got)
	}
	if out, isErr := call(alice2, sleep); isErr {
		t.Errorf("a sleep after the first ended: %s", out)
	}

	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`mcphost_quota_refusals_total{kind="calls",quota="alice-echoes"} 1`,
		`mcphost_quota_refusals_total{kind="concurrent",quota="one-sleep"} 1`,
		`mcphost_tool_calls_total{outcome="quota",server="up",tool="echo"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
