package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcphost-project/mcphost/internal/otlptest"
)

// TestExportAndPropagate: spans reach a real OTLP/HTTP receiver with the
// service's name and the configured headers; a client's traceparent in
// _meta becomes their parent, and what goes upstream names mcphost's span.
func TestExportAndPropagate(t *testing.T) {
	t.Parallel()
	rcv := otlptest.Start(t)
	tr, err := New(Config{Endpoint: rcv.URL, Headers: map[string]string{"X-Api-Key": "k"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	const client = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := FromMeta(context.Background(), map[string]any{"traceparent": client, "progressToken": 3})
	ctx, span := tr.Start(ctx, "tools/call echo", trace.SpanKindServer)
	up := map[string]any{"traceparent": client, "tracestate": "old=1"}
	ToMeta(ctx, up)
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Wait(t, 5*time.Second, func(s []otlptest.Span) bool { return len(s) == 1 })
	s := spans[0]
	if s.Service != "mcphost" || s.Name != "tools/call echo" || s.TraceID() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.ParentID() != "00f067aa0ba902b7" {
		t.Fatalf("span %s %q trace %s parent %s", s.Service, s.Name, s.TraceID(), s.ParentID())
	}
	if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s.SpanID() + "-01"; up["traceparent"] != want {
		t.Errorf("upstream traceparent %v, want %s", up["traceparent"], want)
	}
	if _, ok := up["tracestate"]; ok {
		t.Errorf("the client's tracestate went upstream: %v", up)
	}
	if h := rcv.Headers(); len(h) == 0 || h[0].Get("X-Api-Key") != "k" {
		t.Errorf("export headers %v", h)
	}
}

// TestNilTracer: no telemetry block, no spans, no panics, no meta.
func TestNilTracer(t *testing.T) {
	t.Parallel()
	var tr *Tracer
	ctx, span := tr.Start(context.Background(), "x", trace.SpanKindServer)
	span.End()
	meta := map[string]any{}
	ToMeta(ctx, meta)
	if len(meta) != 0 || span.IsRecording() {
		t.Fatalf("a nil tracer traced: %v", meta)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// FuzzFromMeta: whatever a client puts in _meta, extraction neither
// panics nor makes a valid parent out of a malformed traceparent.
func FuzzFromMeta(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=1")
	f.Add("00-00000000000000000000000000000000-00f067aa0ba902b7-01", "")
	f.Add("ff-zz", ",,,=")
	f.Fuzz(func(t *testing.T, parent, state string) {
		ctx := FromMeta(context.Background(), map[string]any{"traceparent": parent, "tracestate": state})
		sc := trace.SpanContextFromContext(ctx)
		if sc.IsValid() && len(parent) < 55 {
			t.Fatalf("valid span context from %q", parent)
		}
	})
}

// TestCheck: what config validation says.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{Endpoint: "localhost:4318"}, {Endpoint: "ftp://x"}, {Endpoint: "http://x", SampleRatio: 2}} {
		if c.Check() == nil {
			t.Errorf("%+v passed", c)
		}
	}
	if err := (Config{Endpoint: "https://otel.example:4318", SampleRatio: 0.5}).Check(); err != nil {
		t.Error(err)
	}
}
