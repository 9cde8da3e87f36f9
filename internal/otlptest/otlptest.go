// Package otlptest is an OTLP/HTTP trace receiver on loopback for tests:
// it takes what an OpenTelemetry exporter posts to /v1/traces (protobuf,
// or gzip'd protobuf), decodes it with the OTLP protocol's own Go types,
// and keeps the spans.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is the collector. URL is its base (exporters add /v1/traces).
type Receiver struct {
	URL string

	mu      sync.Mutex
	spans   []Span
	headers []http.Header
}

// Span is one received span, with its service's name.
type Span struct {
	Service string
	*tracepb.Span
}

// TraceID and SpanID are the span's ids in the W3C hex form.
func (s Span) TraceID() string { return hex.EncodeToString(s.Span.TraceId) }
func (s Span) SpanID() string  { return hex.EncodeToString(s.Span.SpanId) }

// ParentID is the parent span's id in hex, "" for a root.
func (s Span) ParentID() string { return hex.EncodeToString(s.Span.ParentSpanId) }

// Attr is the string value of the span's attribute key ("" if absent).
func (s Span) Attr(key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// Start runs a Receiver until the test ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	for _, rs := range msg.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, Span{Service: service, Span: s})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Spans are the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Headers are the HTTP headers of each export received.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// Wait waits until ok holds for the spans received, or the timeout.
func (r *Receiver) Wait(t testing.TB, timeout time.Duration, ok func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans()
		if ok(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, the %d spans received are not the ones expected", timeout, len(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
