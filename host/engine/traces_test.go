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

// TestTraces: with a traces block, a call through the gateway is one
// trace from the client's span to the server's: a server span per
// request (the child of the client's traceparent), a span per policy hook
// with one per plugin, a client span for the upstream call, whose context
// the upstream receives in _meta. A denied call's span says which plugin
// denied it.
func TestTraces(t *testing.T) {
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
traces {
  otlp_endpoint = "`+rcv.URL+`"
  service_name  = "gateway-test"
}
`)
	srv := httptest.NewServer(e.Host().Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "traced"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__traceparent", Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("traced call: %v %+v", err, res)
	}
	upstreamSaw := res.Content[0].(*mcp.TextContent).Text
	denied, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__crash"})
	if err != nil || !denied.IsError {
		t.Fatalf("denied call: %v %+v", err, denied)
	}
	cs.Close()
	e.Close() // flushes the spans

	spans := rcv.Wait(t, 10*time.Second, func(s []otlptest.Span) bool { return len(s) > 0 })
	byName := map[string][]otlptest.Span{}
	for _, s := range spans {
		if s.Service != "gateway-test" {
			t.Errorf("span %q from service %q", s.Name, s.Service)
		}
		byName[s.Name] = append(byName[s.Name], s)
	}
	one := func(name string) otlptest.Span {
		t.Helper()
		for _, s := range byName[name] {
			if s.TraceID() == traceID {
				return s
			}
		}
		var names []string
		for n := range byName {
			names = append(names, n)
		}
		t.Fatalf("no span %q in the client's trace; spans: %s", name, strings.Join(names, ", "))
		return otlptest.Span{}
	}
	req := one("tools/call up__traceparent")
	if req.ParentID() != clientSpan || req.Attr("gen_ai.tool.name") != "up__traceparent" || req.Attr("mcp.session.id") == "" {
		t.Errorf("request span: parent %s, attributes %v", req.ParentID(), req.Attributes)
	}
	hook := one("policy tool_call")
	plugin := one("plugin no-crash")
	up := one("tools/call up")
	if hook.ParentID() != req.SpanID() || plugin.ParentID() != hook.SpanID() || up.ParentID() != req.SpanID() {
		t.Errorf("parents: hook %s plugin %s upstream %s, want %s, %s, %s", hook.ParentID(), plugin.ParentID(), up.ParentID(), req.SpanID(), hook.SpanID(), req.SpanID())
	}
	if plugin.Attr("mcphost.action") != "allow" {
		t.Errorf("plugin span action %q", plugin.Attr("mcphost.action"))
	}
	if want := "00-" + traceID + "-" + up.SpanID() + "-01"; upstreamSaw != want {
		t.Errorf("the upstream got traceparent %q, want %q (mcphost's client span)", upstreamSaw, want)
	}

	// The denied call: its own trace, failed, with the denying plugin.
	var deny otlptest.Span
	for _, s := range byName["plugin no-crash"] {
		if s.Attr("mcphost.action") == "deny" {
			deny = s
		}
	}
	if deny.Span == nil || !strings.Contains(deny.Attr("mcphost.reason"), "up__crash") {
		t.Fatalf("no deny span with its reason among %d plugin spans", len(byName["plugin no-crash"]))
	}
	for _, s := range byName["tools/call up__crash"] {
		if s.TraceID() == deny.TraceID() && (s.Status == nil || s.Status.Code != 2 || s.Attr("error.type") != "tool_error") {
			t.Errorf("the denied call's span status %v", s.Status)
		}
	}
	if len(byName["tools/call up"]) != 1 {
		t.Errorf("%d upstream call spans, want 1: a denied call does not reach the server", len(byName["tools/call up"]))
	}
}

// TestTracesMaskResourceURI: a resource URI can carry a credential (a
// signed URL, a token in a template's variable); the request span names
// the resource with it masked, as everything that leaves the process is.
func TestTracesMaskResourceURI(t *testing.T) {
	t.Parallel()
	const secret = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXYZ"
	rcv := otlptest.Start(t)
	e, _ := startAuditEngine(t, `
server "up" {
  command = "UPSTREAM"
  args    = ["-name", "up", "-secrets"]
}
traces {
  otlp_endpoint = "`+rcv.URL+`"
}
`)
	srv := httptest.NewServer(e.Host().Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "traced"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://" + secret}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	e.Close() // flushes the spans

	spans := rcv.Wait(t, 10*time.Second, func(s []otlptest.Span) bool {
		for _, sp := range s {
			if sp.Name == "resources/read" {
				return true
			}
		}
		return false
	})
	for _, sp := range spans {
		if sp.Name != "resources/read" {
			continue
		}
		uri := sp.Attr("mcp.resource.uri")
		if strings.Contains(uri, secret) || !strings.Contains(uri, "REDACTED") {
			t.Errorf("the span's mcp.resource.uri = %q, want it masked", uri)
		}
	}
}
