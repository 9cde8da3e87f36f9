package security

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcphost-project/mcphost/internal/otlptest"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Secrets the hostile upstream puts in front of clients. The tools read
// theirs from the environment, so they never pass through a client's
// arguments (which mcphost may log).
const (
	ghpSecret    = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXYZ"
	dbPassword   = "Hunter2SecretPw"
	stderrSecret = "connecting to postgres://admin:" + dbPassword + "@db.internal/app with " + ghpSecret
)

// connectVersion is connect with a protocol version: up to 2025-11-25
// mcphost may pass results on as the upstream's bytes (rawcall.go), later
// ones always re-encode them, so both paths are attacked.
func connectVersion(t testing.TB, base, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "security-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callJSON calls a tool and returns everything the client got, result or
// error, as text.
func callJSON(t testing.TB, cs *mcp.ClientSession, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func assertNoSecret(t testing.TB, where, text string) {
	t.Helper()
	for _, s := range []string{ghpSecret, dbPassword} {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the secret %q:\n%s", where, s, text)
		}
	}
}

// TestSecretsPastRedact: with builtin:redact in the chain, no secret a
// hostile upstream puts in a result's keys, links, _meta, a JSON-RPC
// error or its stderr reaches a client; its stderr shows in /status and
// the log only masked.
func TestSecretsPastRedact(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
server "up" {
  command = "UPSTREAM"
  env = {
    HOSTILE_SECRET         = "`+ghpSecret+`"
    HOSTILE_STDERR         = "`+stderrSecret+`"
    HOSTILE_FAIL_IF_EXISTS = "`+filepath.Join(dir, "started")+`"
  }
}
plugin "redact" {
  source = "builtin:redact"
}
`)
	s := startServer(t, cfg)
	for _, version := range []string{"2025-06-18", ""} {
		cs := connectVersion(t, s.URL, version)
		for _, tool := range []string{"up__rpc_error", "up__tool_error", "up__structured_key", "up__resource_link", "up__meta", "up__embedded"} {
			got := callJSON(t, cs, tool)
			assertNoSecret(t, tool+" (protocol "+version+")", got)
			if !strings.Contains(got, "REDACTED") {
				t.Errorf("%s (protocol %q): nothing masked, so the secret never reached redact: %s", tool, version, got)
			}
		}
	}

	// A log message from the server reaches mcphost's debug log masked.
	logCS := connect(t, s.URL, nil)
	if err := logCS.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if text, isErr := callText(t, logCS, "up__log", nil); isErr || text != "logged" {
		t.Fatalf("up__log = %q (isError %v)", text, isErr)
	}
	testproc.WaitFor(t, "the upstream's log message in the debug log", 30*time.Second, func() bool {
		return strings.Contains(s.stderr.String(), "upstream log")
	})

	// Text where the ABI form of a result cannot carry it (inside a
	// tool_result block) never goes out past the policies.
	cs0 := connect(t, s.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs0.CallTool(ctx, &mcp.CallToolParams{Name: "up__nested", Arguments: map[string]any{"text": ghpSecret}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	assertNoSecret(t, "up__nested", string(b))

	// The server prints a connection string and dies; every restart
	// fails, printing it again. Clients see that the server is down,
	// never what it printed.
	cs := connect(t, s.URL, nil)
	assertNoSecret(t, "up__crash_loud", callJSON(t, cs, "up__crash_loud"))
	var status string
	testproc.WaitFor(t, "the restart to fail", time.Minute, func() bool {
		status = getStatus(t, s.URL)
		return strings.Contains(status, `"failed"`) && strings.Contains(status, "stderr")
	})
	got := callJSON(t, cs, "up__echo")
	assertNoSecret(t, "a call to the failed server", got)
	if strings.Contains(got, "stderr") || strings.Contains(got, "postgres://") {
		t.Errorf("a client was shown the server's stderr: %s", got)
	}
	status = getStatus(t, s.URL)
	assertNoSecret(t, "/status", status)
	if !strings.Contains(status, "REDACTED") || !strings.Contains(status, "postgres://admin:") {
		t.Errorf("/status should show the stderr masked: %s", status)
	}
	assertNoSecret(t, "the debug log", s.stderr.String())
}

func getStatus(t testing.TB, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSecretsPastRedactInAuditAndTraces: what leaves the process besides
// the client's answer (the audit file and the spans sent to a collector)
// holds no secret either: not the paths of a result whose secret key
// redact masked, not an upstream's JSON-RPC error text.
func TestSecretsPastRedactInAuditAndTraces(t *testing.T) {
	dir := t.TempDir()
	rcv := otlptest.Start(t)
	cfg := writeConfig(t, dir, `
server "up" {
  command = "UPSTREAM"
  env = { HOSTILE_SECRET = "`+ghpSecret+`" }
}
plugin "redact" {
  source = "builtin:redact"
}
audit {
  file    = "audit.jsonl"
  results = true
}
traces {
  otlp_endpoint = "`+rcv.URL+`"
}
`)
	s := startServer(t, cfg)
	cs := connect(t, s.URL, nil)
	for _, tool := range []string{"up__structured_key", "up__rpc_error"} {
		assertNoSecret(t, tool, callJSON(t, cs, tool))
	}
	auditFile := filepath.Join(dir, "audit.jsonl")
	var lines string
	testproc.WaitFor(t, "both calls in the audit file", 30*time.Second, func() bool {
		b, _ := os.ReadFile(auditFile)
		lines = string(b)
		return strings.Count(lines, "\n") >= 2
	})
	assertNoSecret(t, "the audit file", lines)
	if !strings.Contains(lines, `"paths"`) {
		t.Errorf("no paths in the audit lines, so redact's change was not recorded:\n%s", lines)
	}
	spans := rcv.Wait(t, 30*time.Second, func(spans []otlptest.Span) bool {
		for _, sp := range spans {
			if sp.Status != nil && sp.Status.Code == tracepb.Status_STATUS_CODE_ERROR {
				return true
			}
		}
		return false
	})
	for _, sp := range spans {
		b, err := protojson.Marshal(sp.Span)
		if err != nil {
			t.Fatal(err)
		}
		assertNoSecret(t, "span "+sp.Name, string(b))
	}
}
