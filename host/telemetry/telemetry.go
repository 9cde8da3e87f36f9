// Package telemetry sends mcphost's traces to an OpenTelemetry collector
// over OTLP/HTTP, and carries W3C trace context through MCP requests'
// _meta (traceparent, tracestate), so that a trace crosses the gateway:
// from the client's span, through mcphost's request, policy and upstream
// spans, to the server's.
//
// A nil *Tracer traces nothing and costs a nil check; mcphost makes one
// only when the config has a telemetry block.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcphost-project/mcphost/internal/secrets"
)

// Config is where traces go.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP base URL (its traces are
	// posted to Endpoint + "/v1/traces"), e.g. http://127.0.0.1:4318.
	Endpoint string
	// Headers go with every export (an API key of a hosted backend).
	Headers map[string]string
	// SampleRatio is the share of traces started here that are kept, in
	// (0, 1]; 0 means 1. A trace a client started is kept if the client
	// kept it.
	SampleRatio float64
	// ServiceName names mcphost in the backend; "mcphost" by default.
	ServiceName string
	// Timeout bounds one export; 10 s by default.
	Timeout time.Duration
}

// Check reports what is wrong with c, for config validation.
func (c Config) Check() error {
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("endpoint %q is not an http(s) URL (the collector's OTLP/HTTP address, e.g. http://127.0.0.1:4318)", c.Endpoint)
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("sample_ratio %v is not between 0 and 1", c.SampleRatio)
	}
	return nil
}

// Tracer starts mcphost's spans and exports them in batches.
type Tracer struct {
	tp *sdktrace.TracerProvider
	t  trace.Tracer
}

// New starts exporting to c.Endpoint. Exports run in the background: a
// collector that is down costs dropped spans, never a call.
func New(c Config, version string) (*Tracer, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.ServiceName == "" {
		c.ServiceName = "mcphost"
	}
	if c.SampleRatio == 0 {
		c.SampleRatio = 1
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	u, _ := url.Parse(c.Endpoint)
	u.Path = u.Path + "/v1/traces"
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String()), otlptracehttp.WithTimeout(c.Timeout)}
	if len(c.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(c.Headers))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	res := resource.NewSchemaless(semconv.ServiceName(c.ServiceName), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))),
	)
	return &Tracer{tp: tp, t: tp.Tracer("github.com/mcphost-project/mcphost")}, nil
}

var noopTracer = noop.NewTracerProvider().Tracer("")

// Start starts a span named name as a child of ctx's; on a nil Tracer it
// returns ctx and a span that records nothing.
func (t *Tracer) Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(noopContext)
	}
	return t.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// StartAt is Start for a span that began at start (one measured before
// it was known to be worth a span).
func (t *Tracer) StartAt(ctx context.Context, name string, start time.Time, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(noopContext)
	}
	return t.t.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
}

// noopContext carries a span that records nothing.
var noopContext = func() context.Context {
	_, s := noopTracer.Start(context.Background(), "")
	return trace.ContextWithSpan(context.Background(), s)
}()

// Flush exports the spans ended so far.
func (t *Tracer) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Shutdown exports what is left and stops; the tracer starts no more
// spans after it.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// traceContext is the W3C trace context format, the one MCP's _meta
// carries (traceparent, tracestate).
var traceContext = propagation.TraceContext{}

// metaCarrier reads and writes trace context in a request's _meta. Only
// string values count: anything else a client put there is not ours.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// FromMeta returns ctx as the child of the span whose context a request's
// _meta carries; ctx itself when it carries none, or a malformed one.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	if _, ok := meta["traceparent"]; !ok {
		return ctx
	}
	return traceContext.Extract(ctx, metaCarrier(meta))
}

// ToMeta writes ctx's span context into meta (which the caller owns: a
// copy of the request's) for the next hop. It writes nothing when ctx has
// no valid span, and replaces what the client sent otherwise: the
// upstream's parent is mcphost's span, not the client's.
func ToMeta(ctx context.Context, meta map[string]any) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	delete(meta, "tracestate")
	traceContext.Inject(ctx, metaCarrier(meta))
}

// Error records err on span and marks it failed. Its text is masked as
// everything mcphost sends out is (internal/secrets): an upstream's error
// may quote a credential, and a span leaves the process.
func Error(span trace.Span, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	msg := secrets.MaskText(err.Error())
	span.RecordError(errors.New(msg), trace.WithAttributes(attribute.String("error.type", fmt.Sprintf("%T", err))))
	span.SetStatus(codes.Error, msg)
}
