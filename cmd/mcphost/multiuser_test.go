package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestMultiUserGuide runs docs/multi-user.md's config
// (examples/multi-user/config.hcl) as the guide does, but for prebuilt
// servers and free ports: users added at run time with `mcphost users`
// call at once; each has their own notes, which no one else reads; an
// intern cannot delete one; and the call past a user's quota is refused
// with the reason.
func TestMultiUserGuide(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "multi-user", "config.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bins, err := testproc.Build(dir, map[string]string{"notes": "../../examples/servers/notes"})
	if err != nil {
		t.Fatal(err)
	}
	mcpAddr, adminAddr := testproc.FreeAddr(t), testproc.FreeAddr(t)
	text := string(raw)
	for _, r := range [][2]string{
		{`http = "127.0.0.1:7700"`, fmt.Sprintf("http = %q", mcpAddr)},
		{`http = "127.0.0.1:7701"`, fmt.Sprintf("http = %q", adminAddr)},
		{`args    = ["run", "./examples/servers/notes", "-dir", "examples/multi-user/notes/${caller.subject}"]`,
			fmt.Sprintf(`args    = ["-dir", "%s/data/${caller.subject}"]`, dir)},
		{"command = \"go\"\n  args    = [\"-dir\"", fmt.Sprintf("command = %q\n  args    = [\"-dir\"", bins["notes"])},
		{"command = \"go\"\n  args    = [\"run\", \"./examples/servers/clock\"]", fmt.Sprintf("command = %q", clockBin)},
		{"calls      = 60\n", "calls      = 8\n"}, // a budget the test can spend
	} {
		if !strings.Contains(text, r[0]) {
			t.Fatalf("examples/multi-user/config.hcl no longer holds %q: update this test and docs/multi-user.md", r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	cfg := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	const opsKey = "ops-key-0123456789abcdef0123"
	t.Setenv("MCPHOST_ADMIN_KEY", opsKey)
	proc := startMcphost(t, "http://"+adminAddr+"/openapi.json", 30*time.Second, "run", cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcphost:\n%s", proc.logs)
		}
	})

	addUser := func(name string, groups ...string) string {
		t.Helper()
		args := []string{"users", "add", name, "--admin", "http://" + adminAddr, "--key", opsKey, "--json"}
		for _, g := range groups {
			args = append(args, "--group", g)
		}
		out, errs, code := mcphost(t, args...)
		if code != 0 {
			t.Fatalf("users add %s: exit %d\n%s%s", name, code, out, errs)
		}
		var added struct {
			Key struct {
				Key string `json:"key"`
			} `json:"key"`
		}
		if err := json.Unmarshal([]byte(out), &added); err != nil || !strings.HasPrefix(added.Key.Key, "mcph_") {
			t.Fatalf("users add %s printed no key (%v): %s", name, err, out)
		}
		return added.Key.Key
	}

	connect := func(key string) *mcp.ClientSession { return connectKey(t, mcpAddr, key, nil) }
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
		t.Helper()
		return callText(t, cs, &mcp.CallToolParams{Name: tool, Arguments: args})
	}
	alice := connect(addUser("alice", "staff"))
	bob := connect(addUser("bob", "interns"))

	if got, isErr := call(alice, "notes__add_note", map[string]any{"name": "plans", "content": "alice's plans"}); isErr {
		t.Fatalf("alice could not add a note: %s", got)
	}
	if got, isErr := call(bob, "notes__list_notes", map[string]any{}); isErr || strings.Contains(got, "plans") {
		t.Errorf("bob's notes: %q (error %v); alice's note must not be among them", got, isErr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data", "alice", "plans.md")); err != nil || !strings.Contains(string(b), "alice's plans") {
		t.Errorf("alice's note on disk: %q, %v", b, err)
	}
	if _, isErr := call(bob, "notes__add_note", map[string]any{"name": "mine", "content": "bob's"}); isErr {
		t.Fatal("bob could not add a note")
	}
	if got, isErr := call(bob, "notes__delete_note", map[string]any{"name": "mine"}); !isErr || !strings.Contains(got, `denied: policy "interns"`) {
		t.Errorf("an intern deleting a note: %q (error %v), want a refusal", got, isErr)
	}
	// alice has spent 1 of her 8 calls; the 8th goes through, the 9th is refused.
	for i := 0; i < 7; i++ {
		if _, isErr := call(alice, "clock__current_time", map[string]any{}); isErr {
			t.Fatalf("alice's call %d was refused under her quota", i+2)
		}
	}
	if got, isErr := call(alice, "clock__current_time", map[string]any{}); !isErr || !strings.Contains(got, `quota "per-user" allows 8 calls per 1m`) {
		t.Errorf("the call past alice's quota: %q (error %v), want the quota's refusal", got, isErr)
	}
}
