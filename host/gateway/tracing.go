package gateway

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcphost-project/mcphost/abi/decision"
	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/internal/wire"
	"github.com/mcphost-project/mcphost/host/telemetry"
	"github.com/mcphost-project/mcphost/internal/secrets"
)

// Traces (host/telemetry, with a traces block): a server span per
// downstream request, the child of the span whose context the client sent
// in _meta; under it a span per policy hook with a span per plugin that
// ran, and a client span per upstream call (forward), whose context goes
// to the server in _meta. Names and attributes follow OpenTelemetry's MCP
// conventions (mcp.method.name, mcp.session.id, gen_ai.tool.name).

// requestSpan starts the span of a downstream request.
func (h *Host) requestSpan(ctx context.Context, method string, req mcp.Request, ss *mcp.ServerSession) (context.Context, trace.Span) {
	name := method
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	if ss != nil && ss.ID() != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", ss.ID()))
	}
	if p := req.GetParams(); !wire.IsNilParams(p) {
		ctx = telemetry.FromMeta(ctx, p.GetMeta())
		switch p := p.(type) {
		case *mcp.CallToolParamsRaw:
			name += " " + p.Name
			attrs = append(attrs, attribute.String("gen_ai.tool.name", p.Name), attribute.String("gen_ai.operation.name", "execute_tool"))
		case *mcp.GetPromptParams:
			name += " " + p.Name
			attrs = append(attrs, attribute.String("gen_ai.prompt.name", p.Name))
		case *mcp.ReadResourceParams:
			// A URI may carry a credential (a signed URL, a token in a
			// template's variable); a span leaves the process.
			attrs = append(attrs, attribute.String("mcp.resource.uri", secrets.MaskText(p.URI)))
		}
	}
	return h.tracer.Start(ctx, name, trace.SpanKindServer, attrs...)
}

// endRequestSpan ends a request's span with how it went: a JSON-RPC
// error, or a tool's error result, fails it.
func endRequestSpan(span trace.Span, res mcp.Result, err error) {
	switch {
	case err != nil:
		telemetry.Error(span, err)
	case wire.ResultIsError(res):
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "the tool answered with an error")
	}
	span.End()
}

// hookSpan starts the span of one policy hook on a call; its note, given
// each plugin's decision as the chain makes it, adds a span per plugin
// (from the previous plugin's end to its own: the chain runs them one
// after another) and passes the decision on to the audit log when tr
// collects for it. Both are nil when there is nothing to trace or audit.
func (h *Host) hookSpan(ctx context.Context, hook string, tr *callTrace) (context.Context, trace.Span, func(decision.Decision)) {
	auditing := tr != nil && tr.audit
	if h.tracer == nil {
		if auditing {
			return ctx, nil, func(d decision.Decision) { tr.note(audit.MaskDecision(d)) }
		}
		return ctx, nil, nil
	}
	ctx, span := h.tracer.Start(ctx, "policy "+hook, trace.SpanKindInternal, attribute.String("mcphost.hook", hook))
	last := time.Now()
	note := func(d decision.Decision) {
		d = audit.MaskDecision(d)
		now := time.Now()
		attrs := []attribute.KeyValue{attribute.String("mcphost.plugin", d.Plugin), attribute.String("mcphost.action", d.Action)}
		if d.Reason != "" {
			attrs = append(attrs, attribute.String("mcphost.reason", d.Reason))
		}
		_, ps := h.tracer.StartAt(ctx, "plugin "+d.Plugin, last, attrs...)
		if d.Error != "" {
			ps.SetStatus(codes.Error, d.Error)
		}
		ps.End(trace.WithTimestamp(now))
		last = now
		if auditing {
			tr.note(d)
		}
	}
	return ctx, span, note
}
