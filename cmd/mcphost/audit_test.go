package main

import (
	"bytes"
	"context"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

const (
	auditKey   = "k-audit-0123456789abcdef"
	auditToken = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXYZ"
)

// quickstartAudit writes the quickstart's config, unchanged but for
// prebuilt servers, a key, the admin listener, a store and an audit
// block; it returns the config and the audit file.
func quickstartAudit(t *testing.T, mcpAddr, adminAddr string) (string, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart", "config.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bins, err := testproc.Build(dir, map[string]string{"notes": "../../examples/servers/notes"})
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, r := range [][2]string{
		{`http = "127.0.0.1:7700"`, fmt.Sprintf("http = %q\n  auth {\n    key \"op\" {\n      value = %q\n      subject = \"op\"\n      groups = [\"admins\"]\n    }\n  }", mcpAddr, auditKey)},
		{"command   = \"go\"\n  args      = [\"run\", \"./examples/servers/clock\"]", fmt.Sprintf("command = %q", clockBin)},
		{"command   = \"go\"\n  args      = [\"run\", \"./examples/servers/notes\", \"-dir\", \"examples/quickstart/notes\"]",
			fmt.Sprintf("command = %q\n  args = [\"-dir\", %q]", bins["notes"], filepath.Join(dir, "notes-data"))},
	} {
		if !strings.Contains(text, r[0]) {
			t.Fatalf("examples/quickstart/config.hcl no longer holds %q: update this test", r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	text += fmt.Sprintf("admin {\n  http = %q\n}\nstore {\n  sqlite = \"state.db\"\n}\n"+
		"audit {\n  file      = \"audit.jsonl\"\n  arguments = true\n  results   = true\n}\n", adminAddr)
	p := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, filepath.Join(dir, "audit.jsonl")
}

// follow runs `mcphost audit tail --follow ...` until the test calls the
// returned stop, and gives what it printed.
func follow(t *testing.T, args ...string) (*testproc.Buffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &testproc.Buffer{}, &testproc.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"audit", "tail", "--follow"}, args...), strings.NewReader(""), out, errb)
	}()
	return out, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("tail --follow: %v: %s", err, errb.String())
		}
	}
}

// TestAuditCommands runs the quickstart, audited, as a real mcphost with
// real upstreams; calls it over HTTP; and reads the log back with
// `mcphost audit`, from the file and through the admin API.
func TestAuditCommands(t *testing.T) {
	for _, k := range []string{"MCPHOST_ADMIN", "MCPHOST_ADMIN_KEY", "MCPHOST_TOKEN"} {
		t.Setenv(k, "")
	}
	mcpAddr, adminAddr := testproc.FreeAddr(t), testproc.FreeAddr(t)
	cfg, file := quickstartAudit(t, mcpAddr, adminAddr)
	cmd := exec.Command(mcphostBin, "run", cfg, "--no-watch")
	logs := &testproc.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	testproc.WaitFor(t, "mcphost to serve", 60*time.Second, func() bool {
		resp, err := http.Get("http://" + adminAddr + "/openapi.json")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	hc := &http.Client{Transport: bearer{auditKey, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "audit-test"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + mcpAddr + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	defer cs.Close()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, logs.String())
		}
		return res
	}
	call("notes__add_note", map[string]any{"name": "creds", "content": "deploy token " + auditToken})
	if res := call("notes__read_note", map[string]any{"name": "creds"}); res.IsError {
		t.Fatalf("read_note: %+v", res)
	}
	if res := call("notes__delete_note", map[string]any{"name": "creds"}); !res.IsError {
		t.Fatal("delete_note was not denied")
	}
	admin := []string{"--admin", "http://" + adminAddr, "--key", auditKey}

	// The lines, through the admin API: newest first.
	var entries []*audit.Entry
	testproc.WaitFor(t, "three lines in the store", 10*time.Second, func() bool {
		stdout, stderr, code := cli(t, append([]string{"audit", "query", "--json"}, admin...)...)
		if code != 0 {
			t.Fatalf("audit query: %d %s", code, stderr)
		}
		entries = nil
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			if e, err := audit.Decode([]byte(l)); err == nil {
				entries = append(entries, e)
			}
		}
		return len(entries) == 3
	})
	denied, redacted := entries[0], entries[1]
	steps := func(e *audit.Entry) string {
		var s []string
		for _, d := range e.Decisions {
			s = append(s, d.Plugin+"/"+d.Hook+"/"+d.Action)
		}
		return strings.Join(s, " ")
	}
	// Every quickstart policy with a call or result hook, in chain order
	// (titles acts on listings only).
	if got, want := steps(redacted), "no-delete/tool_call/allow redact/tool_call/allow redact/tool_result/changed truncate/tool_result/unchanged json-results/tool_result/unchanged"; got != want {
		t.Errorf("the redacted call's decisions:\n got %s\nwant %s", got, want)
	}
	if got := steps(denied); got != "no-delete/tool_call/deny" || denied.Decisions[0].Reason == "" || denied.Outcome != "denied" {
		t.Errorf("the denied call: %s %+v", got, denied)
	}
	if redacted.Caller.Subject != "op" || redacted.Caller.Client != "audit-test" || redacted.Caller.Session == "" || redacted.Caller.Method != "key" {
		t.Errorf("caller %+v", redacted.Caller)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), auditToken) || !strings.Contains(string(data), "[REDACTED:github_token]") {
		t.Errorf("the audit file should hold the token masked:\n%s", data)
	}

	// Human columns, filtered.
	stdout, stderr, code := cli(t, append([]string{"audit", "query", "--outcome", "denied"}, admin...)...)
	if code != 0 || !strings.Contains(stdout, "notes__delete_note") || !strings.Contains(stdout, "no-delete denied: ") ||
		strings.Contains(stdout, "read_note") || !strings.HasPrefix(stdout, "TIME (UTC)") {
		t.Errorf("query --outcome denied: %d\n%s%s", code, stdout, stderr)
	}
	// The file, oldest first.
	stdout, _, code = cli(t, "audit", "tail", "--file", file, "--lines", "2")
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); code != 0 || len(lines) != 3 ||
		!strings.Contains(lines[1], "notes__read_note") || !strings.Contains(lines[2], "notes__delete_note") ||
		!strings.Contains(lines[1], "redact changed /_meta,/content/0,/content/1") {
		t.Errorf("tail --file --lines 2: %d\n%s", code, stdout)
	}
	stdout, _, code = cli(t, "audit", "query", "--file", file, "--subject", "op", "--tool", "add_note", "--json")
	if code != 0 || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, `"name":"notes__add_note"`) {
		t.Errorf("query --file --tool add_note: %d\n%s", code, stdout)
	}

	// Following both: a new call shows in each.
	fromFile, stopFile := follow(t, "--file", file, "--lines", "0", "--json")
	fromAPI, stopAPI := follow(t, append([]string{"--lines", "1"}, admin...)...)
	time.Sleep(300 * time.Millisecond) // both have read what is there
	call("clock__current_time", map[string]any{})
	testproc.WaitFor(t, "the new call in both", 10*time.Second, func() bool {
		return strings.Contains(fromFile.String(), "clock__current_time") && strings.Contains(fromAPI.String(), "clock__current_time")
	})
	stopFile()
	stopAPI()
	if n := strings.Count(fromFile.String(), "\n"); n != 1 {
		t.Errorf("--file --lines 0 --follow printed %d lines:\n%s", n, fromFile.String())
	}
	if s := fromAPI.String(); !strings.Contains(s, "notes__delete_note") || strings.Count(s, "\n") != 3 {
		t.Errorf("--admin --lines 1 --follow: want the header, the last line and the new one:\n%s", s)
	}

	// Mistakes.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"audit", "query", "--file", filepath.Join(t.TempDir(), "none.jsonl")}, 1, "no audit file"},
		{[]string{"audit", "tail", "--file", file, "--since", "last tuesday"}, 2, "--since"},
		{[]string{"audit", "query", "--file", file, "--admin", "http://x"}, 2, "not both"},
		{[]string{"audit", "query", "--kind", "tool"}, 2, "--kind"},
		{[]string{"audit", "query", "--admin", "http://" + adminAddr, "--key", "wrong-0123456789abcdef"}, 1, "The key was refused"},
		{[]string{"audit", "frobnicate"}, 2, "unknown command"},
	} {
		_, stderr, code := cli(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// FuzzReadAuditLines: whatever a file holds, reading it never fails or
// panics; what it yields are audit lines whose JSON decodes again; and it
// consumes exactly up to the last newline.
func FuzzReadAuditLines(f *testing.F) {
	line, _ := json.Marshal(&audit.Entry{ID: audit.NewID(time.Unix(1, 0)), Time: time.Unix(1, 0).UTC(), Name: "a__b"})
	f.Add(append(append(line, '\n'), line...))
	f.Add([]byte("\n\n{not json}\n" + string(line) + "\r\n"))
	f.Add([]byte(`{"id":"x","time":"2026-11-25T10:00:00Z","decisions":[{"plugin":"p\u001b[31m"}]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []auditLine
		consumed, bad, err := readAuditLines(bytes.NewReader(data), func(l auditLine) { got = append(got, l) })
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(bytes.LastIndexByte(data, '\n') + 1); consumed != want {
			t.Fatalf("consumed %d bytes, want %d", consumed, want)
		}
		if bad < 0 || len(got)+bad > bytes.Count(data, []byte("\n")) {
			t.Fatalf("%d lines and %d bad from %d newlines", len(got), bad, bytes.Count(data, []byte("\n")))
		}
		for _, l := range got {
			if _, err := audit.Decode(l.raw); err != nil || bytes.ContainsRune(l.raw, '\n') {
				t.Fatalf("yielded %q: %v", l.raw, err)
			}
			// What a terminal gets is free of control characters.
			var out bytes.Buffer
			(&auditPrinter{w: &out}).print(l)
			for _, r := range strings.TrimSuffix(out.String(), "\n") {
				if r < 0x20 && r != '\n' || r == 0x7f {
					t.Fatalf("printed control character %q in %q", r, out.String())
				}
			}
		}
	})
}

// FuzzDecodeAuditPage: any answer is a page of valid lines or an error.
func FuzzDecodeAuditPage(f *testing.F) {
	line, _ := json.Marshal(&audit.Entry{ID: audit.NewID(time.Unix(1, 0)), Time: time.Unix(1, 0).UTC()})
	f.Add([]byte(`{"entries":[` + string(line) + `],"next":"YTEu"}`))
	f.Add([]byte(`{"entries":[{}],"next":""}`))
	f.Add([]byte(`{"entries":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, _, err := decodeAuditPage(data)
		if err != nil {
			return
		}
		for _, l := range lines {
			if l.e == nil || l.e.ID == "" || l.e.Time.IsZero() {
				t.Fatalf("a page entry without id or time: %s", l.raw)
			}
		}
	})
}

// TestAuditTailConfig: given a config, audit reads that config's own audit
// file; a config with neither a file nor an admin API says so.
func TestAuditTailConfig(t *testing.T) {
	dir := t.TempDir()
	line := `{"id":"a1","time":"2026-11-28T08:00:00Z","kind":"call","caller":{"subject":"alice"},"name":"up__echo","server":"up","tool":"echo","outcome":"ok","durationMs":1}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "calls.jsonl"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(cfg, []byte("audit {\n  file = \"calls.jsonl\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cli(t, "audit", "tail", cfg)
	if code != 0 || !strings.Contains(out, "alice") || !strings.Contains(out, "up__echo") {
		t.Errorf("audit tail CONFIG: exit %d\n%s%s", code, out, errs)
	}
	bare := filepath.Join(dir, "bare.hcl")
	if err := os.WriteFile(bare, []byte("server \"up\" {\n  command = \"true\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := cli(t, "audit", "query", bare); code != 1 || !strings.Contains(errs, "writes no audit file") {
		t.Errorf("audit query of a config without audit: exit %d\n%s", code, errs)
	}
}
