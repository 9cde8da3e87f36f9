package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/pgtest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

const replicaKey = "replica-admin-key-0123456789"

// replica is one `mcphost run` process of a set sharing a store.
type replica struct {
	proc      *runningMcphost
	mcp, api  string
	configDir string
}

// startReplica is one `mcphost run` with the admin listener and the
// store storeBlock, and the config blocks of extra.
func startReplica(t *testing.T, storeBlock string, extra ...string) *replica {
	t.Helper()
	r := &replica{mcp: testproc.FreeAddr(t), api: testproc.FreeAddr(t)}
	cfg := writeConfig(t, fmt.Sprintf(`
listen {
  http = %q
  auth {
    key "op" {
      value   = %q
      subject = "operator"
      groups  = ["admins"]
    }
  }
}
admin {
  http = %q
}
store {
  %s
}
%s`, r.mcp, replicaKey, r.api, storeBlock, strings.Join(extra, "\n")))
	r.proc = startMcphost(t, "http://"+r.api+"/openapi.json", 30*time.Second, "run", cfg)
	return r
}

func (r *replica) stop(sig syscall.Signal) { r.proc.stop(sig, 10*time.Second) }

// call sends one admin request and returns the status and body.
func (r *replica) call(method, path, body string) (int, map[string]any, error) {
	req, _ := http.NewRequest(method, "http://"+r.api+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+replicaKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return resp.StatusCode, m, nil
}

// TestReplicasShareAPostgresStore runs two mcphost processes on one
// PostgreSQL database: a server added through one is served by the other,
// and killing one with SIGKILL while it takes updates loses none that it
// acknowledged.
func TestReplicasShareAPostgresStore(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	storeBlock := fmt.Sprintf("postgres = %q\n  key = \"BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\"\n  poll = \"200ms\"", dsn)
	a := startReplica(t, storeBlock)
	b := startReplica(t, storeBlock)

	def := fmt.Sprintf(`{"name":"shared","command":%q,"args":["-name","shared"],"env":{"HOSTILE_SECRET":"x"}}`, upstreamBin)
	if code, body, err := a.call("POST", "/v1/servers", def); err != nil || code != http.StatusCreated {
		t.Fatalf("adding through a: %d %v %v", code, body, err)
	}

	// b serves it to an MCP client.
	hc := &http.Client{Transport: bearer{replicaKey, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "replica-test"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + b.mcp + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	testproc.WaitFor(t, "replica b to serve the server added through a", 15*time.Second, func() bool {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shared__echo", Arguments: map[string]any{"text": "via b"}})
		return err == nil && !res.IsError
	})

	// Updates through a, one after another; a dies by SIGKILL among them.
	var acked atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); ; i++ {
			code, _, err := a.call("PATCH", "/v1/servers/shared", fmt.Sprintf(`{"timeout":"%ds"}`, i))
			if err != nil {
				return
			}
			if code != http.StatusOK {
				t.Errorf("update %d: status %d", i, code)
				return
			}
			acked.Store(i)
		}
	}()
	testproc.WaitFor(t, "some updates to be acknowledged", 30*time.Second, func() bool { return acked.Load() >= 5 })
	a.stop(syscall.SIGKILL)
	<-done
	last := acked.Load()

	_, body, err := b.call("GET", "/v1/servers/shared", "")
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	fmt.Sscanf(fmt.Sprint(body["timeout"]), "%ds", &got)
	// The update in flight when a died may or may not have committed;
	// every acknowledged one has.
	if got != last && got != last+1 {
		t.Fatalf("after SIGKILL: stored timeout %v, last acknowledged %ds", body["timeout"], last)
	}
	if body["env"].(map[string]any)["HOSTILE_SECRET"] != "********" {
		t.Fatalf("secrets after the kill: %v", body["env"])
	}

	// a comes back with the server, as b has it.
	a2 := startReplica(t, storeBlock)
	code, again, err := a2.call("GET", "/v1/servers/shared", "")
	if err != nil || code != http.StatusOK || again["timeout"] != body["timeout"] {
		t.Fatalf("restarted replica: %d %v %v", code, again, err)
	}
	testproc.WaitFor(t, "the restarted replica to connect the stored server", 15*time.Second, func() bool {
		_, m, err := a2.call("GET", "/v1/servers/shared", "")
		st, _ := m["status"].(map[string]any)
		return err == nil && st["state"] == "connected"
	})
}
