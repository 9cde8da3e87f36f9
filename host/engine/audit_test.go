package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/engine"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

const auditToken = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXYZ"

// auditChain is a real upstream behind built-in policies that deny, rewrite,
// mask and reshape, with an audit log to a file and the store.
const auditChain = `
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up"]
}
plugin "no-crash" {
  source = "builtin:deny"
  config = { tools = ["up__crash*"] }
}
plugin "defaults" {
  source = "builtin:arguments"
  config = { defaults = { "up__echo" = { text = "{\"fallback\": true}" } } }
}
plugin "redact" {
  source = "builtin:redact"
}
plugin "json-results" {
  source = "builtin:json_results"
}
store {
  sqlite = "state.db"
}
audit {
  file      = "audit.jsonl"
  arguments = true
  results   = true
  listings  = true
}
`

func startAuditEngine(t *testing.T, src string) (*engine.Engine, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcphost.hcl")
	file, diags := config.Parse([]byte(strings.ReplaceAll(src, "UPSTREAM", upstreamBin)), path)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := engine.Start(ctx, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, dir
}

// decisionOf finds plugin's decision on hook in e, or fails.
func decisionOf(t *testing.T, e *audit.Entry, plugin, hook string) decision.Decision {
	t.Helper()
	for _, d := range e.Decisions {
		if d.Plugin == plugin && d.Hook == hook {
			return d
		}
	}
	t.Fatalf("no decision of %s on %s in %+v", plugin, hook, e.Decisions)
	return decision.Decision{}
}

func TestAuditRecordsEachPolicyDecision(t *testing.T) {
	t.Parallel()
	e, dir := startAuditEngine(t, auditChain)
	ctx := context.Background()
	caller := abi.Caller{SessionID: "s-1", ClientName: "audit-test", Subject: "alice", Groups: []string{"eng"}, AuthMethod: abi.AuthKey}

	if _, err := e.Host().Tools(ctx, caller); err != nil {
		t.Fatal(err)
	}
	// A call the upstream answers with a token: redact masks it, and
	// json_results leaves the text (not JSON) alone.
	secret, _ := json.Marshal(map[string]string{"text": "token " + auditToken})
	if _, err := e.Host().CallTool(ctx, caller, "up__echo", secret); err != nil {
		t.Fatal(err)
	}
	// A call without text: arguments fills the default in, and the
	// upstream echoes JSON, to which json_results adds structuredContent.
	if _, err := e.Host().CallTool(ctx, caller, "up__echo", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	// A call to a tool deny hides.
	res, err := e.Host().CallTool(ctx, caller, "up__crash", json.RawMessage(`{}`))
	if err != nil || !res.IsError {
		t.Fatalf("denied call: %+v, %v", res, err)
	}
	if err := e.Audit().Flush(ctx); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), auditToken) {
		t.Fatalf("the token is in the audit file:\n%s", data)
	}
	var lines []*audit.Entry
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		en, err := audit.Decode([]byte(l))
		if err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		lines = append(lines, en)
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a listing and three calls:\n%s", len(lines), data)
	}
	listing, masked, rewritten, denied := lines[0], lines[1], lines[2], lines[3]

	// The listing: deny hid both crash tools.
	if listing.Kind != audit.KindListing || listing.Outcome != "denied" {
		t.Errorf("listing line %+v", listing)
	}
	if d := decisionOf(t, listing, "no-crash", "tools_list"); d.Action != "deny" || !slices.Equal(d.Tools, []string{"up__crash", "up__crash_loud"}) {
		t.Errorf("listing decision %+v", d)
	}

	// The masked call: who called, every plugin's decision in order, the
	// parts redact changed, the token masked in arguments and result.
	if masked.Kind != "" || masked.Name != "up__echo" || masked.Server != "up" || masked.Tool != "echo" || masked.Outcome != "ok" {
		t.Errorf("masked call %+v", masked)
	}
	if c := masked.Caller; c.Subject != "alice" || c.Session != "s-1" || c.Client != "audit-test" || c.Method != abi.AuthKey || !slices.Equal(c.Groups, []string{"eng"}) {
		t.Errorf("caller %+v", c)
	}
	var order []string
	for _, d := range masked.Decisions {
		order = append(order, d.Plugin+"/"+d.Hook+"/"+d.Action)
	}
	want := []string{"no-crash/tool_call/allow", "defaults/tool_call/allow", "redact/tool_call/allow",
		"redact/tool_result/changed", "json-results/tool_result/unchanged"}
	if !slices.Equal(order, want) {
		t.Errorf("decisions %q, want %q", order, want)
	}
	if d := decisionOf(t, masked, "redact", "tool_result"); !slices.Equal(d.Paths, []string{"/_meta", "/content/0", "/content/1"}) {
		t.Errorf("redact changed %q, want the text, its note and _meta", d.Paths)
	}
	if !strings.Contains(string(masked.Arguments), "[REDACTED:github_token]") || !strings.Contains(string(masked.Result), "[REDACTED:github_token]") {
		t.Errorf("arguments %s, result %s: want the token masked", masked.Arguments, masked.Result)
	}
	if masked.RequestBytes != len(secret) || masked.ResponseBytes == 0 || masked.DurationMs <= 0 || masked.UpstreamMs <= 0 || masked.PolicyMs <= 0 {
		t.Errorf("sizes and times %+v", masked)
	}

	// The rewritten call: the path arguments added, the part json_results added.
	if d := decisionOf(t, rewritten, "defaults", "tool_call"); d.Action != "rewrite" || !slices.Equal(d.Paths, []string{"/text"}) {
		t.Errorf("rewrite %+v", d)
	}
	if d := decisionOf(t, rewritten, "json-results", "tool_result"); d.Action != "changed" || !slices.Equal(d.Paths, []string{"/structuredContent"}) {
		t.Errorf("json_results %+v", d)
	}

	// The denied call: the plugin and its reason; no upstream time.
	if denied.Outcome != "denied" || denied.Server != "up" || denied.Tool != "crash" || denied.UpstreamMs != 0 {
		t.Errorf("denied call %+v", denied)
	}
	if d := decisionOf(t, denied, "no-crash", "tool_call"); d.Action != "deny" || d.Reason == "" {
		t.Errorf("deny %+v", d)
	}

	// The store holds the same lines, newest first, and filters them.
	page, err := e.QueryAudit(ctx, store.AuditQuery{Outcome: "denied", Kind: audit.KindCall})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Lines) != 1 {
		t.Fatalf("%d denied calls in the store", len(page.Lines))
	}
	got, err := audit.Decode(page.Lines[0])
	if err != nil || got.ID != denied.ID {
		t.Fatalf("store line %s, %v; want %s", page.Lines[0], err, denied.ID)
	}
	if st := e.Audit().Stats(); st.FileWritten != 4 || st.StoreWritten != 4 || st.FileDropped+st.StoreDropped+st.RedactFailed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestAuditOffWithoutBlock: no audit block, no audit log, and the query
// says why.
func TestAuditOffWithoutBlock(t *testing.T) {
	t.Parallel()
	e, _ := startAuditEngine(t, `
server "up" {
  command = "UPSTREAM"
}
store {
  sqlite = "state.db"
}
`)
	if e.Audit() != nil {
		t.Fatal("an audit log without an audit block")
	}
	if _, err := e.QueryAudit(context.Background(), store.AuditQuery{}); err != engine.ErrNoAuditStore {
		t.Fatalf("QueryAudit: %v, want ErrNoAuditStore", err)
	}
}

// startLogged starts an engine on src (UPSTREAM replaced) with its log in
// logs, and returns it and a parser for the configs it is reloaded with.
func startLogged(t *testing.T, src string) (*engine.Engine, func(string) *config.File, *testproc.Buffer) {
	t.Helper()
	dir := t.TempDir()
	parse := func(src string) *config.File {
		t.Helper()
		file, diags := config.Parse([]byte(strings.ReplaceAll(src, "UPSTREAM", upstreamBin)), filepath.Join(dir, "mcphost.hcl"))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		return file
	}
	logs := &testproc.Buffer{}
	e, err := engine.Start(context.Background(), parse(src), &engine.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: logs})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, parse, logs
}

const upServer = "server \"up\" {\n  command = \"UPSTREAM\"\n}\n"

// TestAuditBlockChangeWaitsForRestart: a reload that changes the audit
// block says the running log keeps its settings.
func TestAuditBlockChangeWaitsForRestart(t *testing.T) {
	t.Parallel()
	e, parse, logs := startLogged(t, upServer+"audit {\n  file = \"a.jsonl\"\n}\n")
	if err := e.Reload(context.Background(), parse(upServer+"audit {\n  file = \"a.jsonl\"\n}\n")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "audit block changed") {
		t.Fatalf("warned with the block unchanged:\n%s", logs.String())
	}
	if err := e.Reload(context.Background(), parse(upServer+"audit {\n  file = \"a.jsonl\"\n  results = true\n}\n")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "audit block changed") {
		t.Fatalf("no warning that the audit block waits for a restart:\n%s", logs.String())
	}
}

// TestReloadSaysWhatWaitsForRestart: a traces block added at reload is not
// ignored in silence: the reload says it waits for a restart, and why.
func TestReloadSaysWhatWaitsForRestart(t *testing.T) {
	t.Parallel()
	e, parse, logs := startLogged(t, upServer)
	if err := e.Reload(context.Background(), parse(upServer+"traces {\n  otlp_endpoint = \"http://127.0.0.1:4318\"\n}\n")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "the traces block changed") || !strings.Contains(logs.String(), "until mcphost restarts") {
		t.Fatalf("a traces block added at reload, in silence:\n%s", logs.String())
	}
}
