package engine_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/otlptest"
)

// TestCodeModeTraces: from an HCL config (tools { exposure = "code" }),
// a run_code call is one trace: its request span, under it a span per
// tool call of the script, each with its policy hook and its upstream
// call, whose context the upstream receives. A call the policy denies
// has its span, failed, and no upstream call.
func TestCodeModeTraces(t *testing.T) {
	t.Parallel()
	rcv := otlptest.Start(t)
	e, _ := startAuditEngine(t, `
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up", "-trace"]
}
plugin "no-crash" {
  source = "builtin:deny"
  config = { tools = ["up__crash*"] }
}
tools {
  exposure = "code"
  code {
    timeout   = "1m"
    max_calls = 5
  }
}
traces {
  otlp_endpoint = "`+rcv.URL+`"
  service_name  = "gateway-test"
}
`)
	srv := httptest.NewServer(e.Host().Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "traced"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 1 || !strings.Contains(list.Tools[0].Description, "5 tool calls per program") {
		t.Fatalf("tools/list: %v %+v", err, list)
	}
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"},
		Arguments: map[string]any{"code": `const denied = callTool("up__crash", {}).isError; return {tp: tools.up__traceparent({}), denied}`}})
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	answer := res.Content[0].(*mcp.TextContent).Text
	cs.Close()
	e.Close() // flushes the spans

	spans := rcv.Wait(t, 10*time.Second, func(s []otlptest.Span) bool { return len(s) > 0 })
	byName := map[string]otlptest.Span{}
	for _, s := range spans {
		if s.TraceID() == traceID {
			byName[s.Name] = s
		}
	}
	for _, name := range []string{"tools/call run_code", "tools/call up__traceparent", "tools/call up__crash", "tools/call up"} {
		if byName[name].Span == nil {
			t.Fatalf("no span %q in the client's trace (%d spans)", name, len(byName))
		}
	}
	run, inner, denied, up := byName["tools/call run_code"], byName["tools/call up__traceparent"], byName["tools/call up__crash"], byName["tools/call up"]
	if run.ParentID() != clientSpan || inner.ParentID() != run.SpanID() || denied.ParentID() != run.SpanID() || up.ParentID() != inner.SpanID() {
		t.Errorf("parents: run_code %s, inner %s, denied %s, upstream %s", run.ParentID(), inner.ParentID(), denied.ParentID(), up.ParentID())
	}
	if inner.Attr("mcphost.via") != "run_code" || denied.Status == nil || denied.Status.Code != 2 {
		t.Errorf("inner spans: via %q, denied status %v", inner.Attr("mcphost.via"), denied.Status)
	}
	if want := `{"tp":"00-` + traceID + "-" + up.SpanID() + `-01","denied":true}`; answer != want {
		t.Errorf("run_code answered %s, want %s (the upstream got mcphost's client span)", answer, want)
	}
}
