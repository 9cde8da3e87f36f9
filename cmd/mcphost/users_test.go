package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/pgtest"
)

// startUserReplica is one `mcphost run` on the shared store, serving one
// upstream; store.poll is left at its default (2 s), which users do not
// wait for.
func startUserReplica(t *testing.T, dsn string) *replica {
	t.Helper()
	return startReplica(t, fmt.Sprintf("postgres = %q", dsn), `
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
}`)
}

// usersCLI runs `mcphost users ARGS --json` against r and decodes its
// answer.
func usersCLI(t *testing.T, r *replica, args ...string) map[string]any {
	t.Helper()
	out, errs, code := mcphost(t, append(append([]string{"users"}, args...), "--admin", "http://"+r.api, "--key", replicaKey, "--json")...)
	if code != 0 {
		t.Fatalf("mcphost users %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	var m map[string]any
	if strings.TrimSpace(out) != "" {
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("mcphost users %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return m
}

// connectAs opens an MCP session to r with key.
func connectAs(ctx context.Context, r *replica, key string) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "users-test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + r.mcp + "/mcp", HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// callUp calls up__echo once.
func callUp(ctx context.Context, cs *mcp.ClientSession) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "hi"}})
	if err == nil && res.IsError {
		return fmt.Errorf("tool error: %v", res.Content)
	}
	return err
}

// within waits up to d for ok, trying every 20 ms, and reports how long it
// took; the test fails after d.
func within(t *testing.T, what string, d time.Duration, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// TestUsersAcrossReplicas runs two mcphost processes on one PostgreSQL
// database. A user added with `mcphost users add` through replica a calls
// a tool through replica b with its new key within a second, with no
// restart; its key revoked through a is refused by b within a second,
// and the sessions it opened on both replicas are closed.
func TestUsersAcrossReplicas(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	a := startUserReplica(t, dsn)
	b := startUserReplica(t, dsn)
	ctx := context.Background()

	added := usersCLI(t, a, "add", "alice", "--group", "eng", "--key-name", "laptop")
	key, _ := added["key"].(map[string]any)
	secret, _ := key["key"].(string)
	keyID, _ := key["id"].(string)
	if !strings.HasPrefix(secret, "mcph_") || keyID == "" {
		t.Fatalf("added: %v", added)
	}
	var onB *mcp.ClientSession
	took := within(t, "the new key to call a tool through replica b", time.Second, func() bool {
		cs, err := connectAs(ctx, b, secret)
		if err != nil {
			return false
		}
		if err := callUp(ctx, cs); err != nil {
			cs.Close()
			return false
		}
		onB = cs
		return true
	})
	t.Logf("the new key worked on replica b after %s", took)
	defer onB.Close()
	onA, err := connectAs(ctx, a, secret)
	if err != nil {
		t.Fatalf("the new key on the replica that added it: %v", err)
	}
	defer onA.Close()
	if err := callUp(ctx, onA); err != nil {
		t.Fatal(err)
	}
	ended := func(cs *mcp.ClientSession) <-chan struct{} {
		ch := make(chan struct{})
		go func() { cs.Wait(); close(ch) }()
		return ch
	}
	endedA, endedB := ended(onA), ended(onB)

	// The key is listed by id and name, never shown again.
	listed := usersCLI(t, b, "list")
	if raw, _ := json.Marshal(listed); strings.Contains(string(raw), secret) || !strings.Contains(string(raw), keyID) {
		t.Fatalf("users list: %s", raw)
	}

	usersCLI(t, a, "key", "revoke", "alice", keyID)
	revoked := time.Now()
	took = within(t, "replica b to refuse the revoked key", time.Second, func() bool {
		cs, err := connectAs(ctx, b, secret)
		if err == nil {
			cs.Close()
			return false
		}
		return true
	})
	t.Logf("replica b refused the revoked key after %s", took)
	for name, ch := range map[string]<-chan struct{}{"a": endedA, "b": endedB} {
		select {
		case <-ch:
		case <-time.After(time.Second - time.Since(revoked)):
			t.Fatalf("the revoked key's session on replica %s is still open a second after the revocation", name)
		}
	}
	t.Logf("both sessions closed %s after the revocation", time.Since(revoked))
	if err := callUp(ctx, onB); err == nil {
		t.Fatal("a call on the revoked key's session still answers")
	}
	// The operator's config key is untouched.
	op, err := connectAs(ctx, b, replicaKey)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if err := callUp(ctx, op); err != nil {
		t.Fatal(err)
	}
}

// TestUsersCLI: the text of `mcphost users`, and a config key refused with
// the file named.
func TestUsersCLI(t *testing.T) {
	r := startUserReplica(t, pgtest.NewDatabase(t))
	run := func(args ...string) (string, string, int) {
		return mcphost(t, append(append([]string{"users"}, args...), "--admin", "http://"+r.api, "--key", replicaKey)...)
	}
	out, errs, code := run("add", "bob", "--group", "ops", "--attr", "team=core")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[1], "mcph_") || !strings.Contains(lines[0], "shown this once") {
		t.Fatalf("add: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code = run("disable", "bob"); code != 0 || !strings.Contains(out, "bob: disabled, groups ops, attributes team=core") {
		t.Fatalf("disable: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code = run("list"); code != 0 || !strings.Contains(out, "operator") || !regexp.MustCompile(`bob\s+store\s+disabled\s+ops\s+[0-9a-f]{16}`).MatchString(out) {
		t.Fatalf("list: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code = run("delete", "operator"); code != 1 || !strings.Contains(errs, "defined in the config file") {
		t.Fatalf("delete of a config user: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code = run("key", "revoke", "bob", "nope"); code != 1 || !strings.Contains(errs, "No such key") {
		t.Fatalf("revoke of no key: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code = run("delete", "bob"); code != 0 || out != "removed bob and its keys\n" {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errs)
	}
}
