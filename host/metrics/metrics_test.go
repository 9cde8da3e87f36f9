package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcphost-project/mcphost/host/audit"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// TestExposition: what a scrape shows, and that it passes the linter
// promtool uses (names, units, help).
func TestExposition(t *testing.T) {
	t.Parallel()
	m := New()
	m.Watch(Sources{
		Upstreams: func() []upstream.Status {
			return []upstream.Status{{Name: "files", Transport: "stdio", State: upstream.StateConnected, Tools: 3, Reconnects: 2, InFlight: 1}}
		},
		Sessions: func() map[string]int { return map[string]int{gateway.DownstreamHTTP: 4} },
		Plugins:  func() []PluginStatus { return []PluginStatus{{Name: "redact", Loaded: true, Calls: 10, Reused: 5}} },
		Swaps:    func() uint64 { return 3 },
		Hooks: func() []HookStatus {
			return []HookStatus{{Plugin: "redact", Hook: "tool_result", Calls: 4, Failures: 2, Traps: 1, Timeouts: 0,
				Bounds: []float64{.001, .01}, Buckets: []uint64{3, 4}, Sum: .005}}
		},
		Audit: func() audit.Stats {
			return audit.Stats{FileWritten: 7, StoreWritten: 6, StoreDropped: 1, RedactFailed: 2}
		},
	})
	m.ToolCall("files", "read_file", gateway.CallOK, gateway.CallTimes{Total: 2 * time.Millisecond, Upstream: time.Millisecond, Policy: 100 * time.Microsecond})
	m.ToolCall("files", "read_file", gateway.CallOK, gateway.CallTimes{Total: 3 * time.Millisecond, Upstream: 2 * time.Millisecond})
	m.ToolCall("", "", gateway.CallUnknown, gateway.CallTimes{Total: time.Millisecond})
	m.ToolsListBuilt(time.Millisecond, nil)

	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "mcphost_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.Reader(rec.Body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f := families[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
	metrics:
		for _, mt := range f.Metric {
			for _, l := range mt.Label {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metrics
				}
			}
			switch {
			case mt.Counter != nil:
				return mt.Counter.GetValue()
			case mt.Gauge != nil:
				return mt.Gauge.GetValue()
			case mt.Histogram != nil:
				return float64(mt.Histogram.GetSampleCount())
			}
		}
		t.Fatalf("no %s with %v", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"mcphost_tool_calls_total", map[string]string{"server": "files", "tool": "read_file", "outcome": "ok"}, 2},
		{"mcphost_tool_calls_total", map[string]string{"outcome": "unknown_tool"}, 1},
		{"mcphost_tool_call_duration_seconds", map[string]string{"server": "files"}, 2},
		{"mcphost_upstream_call_duration_seconds", map[string]string{"server": "files"}, 2},
		{"mcphost_policy_call_duration_seconds", map[string]string{"server": "files"}, 1},
		{"mcphost_upstream_connected", map[string]string{"server": "files"}, 1},
		{"mcphost_upstream_state", map[string]string{"server": "files", "state": "failed"}, 0},
		{"mcphost_upstream_reconnects_total", map[string]string{"server": "files"}, 2},
		{"mcphost_downstream_sessions", map[string]string{"transport": "http"}, 4},
		{"mcphost_plugin_reused_total", map[string]string{"plugin": "redact"}, 5},
		{"mcphost_plugin_chain_generation", nil, 3},
		{"mcphost_tools_list_builds_total", map[string]string{"result": "ok"}, 1},
		{"mcphost_tools_list_build_duration_seconds", nil, 1},
		{"mcphost_plugin_hook_calls_total", map[string]string{"plugin": "redact", "hook": "tool_result"}, 4},
		{"mcphost_plugin_hook_failures_total", map[string]string{"plugin": "redact", "kind": "trap"}, 1},
		{"mcphost_plugin_hook_failures_total", map[string]string{"plugin": "redact", "kind": "other"}, 1},
		{"mcphost_plugin_hook_duration_seconds", map[string]string{"plugin": "redact", "hook": "tool_result"}, 4},
		{"mcphost_audit_lines_written_total", map[string]string{"sink": "file"}, 7},
		{"mcphost_audit_lines_written_total", map[string]string{"sink": "store"}, 6},
		{"mcphost_audit_lines_dropped_total", map[string]string{"sink": "store"}, 1},
		{"mcphost_audit_lines_dropped_total", map[string]string{"sink": "file"}, 0},
		{"mcphost_audit_redact_failures_total", nil, 2},
		{"go_goroutines", nil, -1},
		{"process_resident_memory_bytes", nil, -1},
	} {
		if got := value(c.name, c.labels); c.want >= 0 && got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// BenchmarkToolCall is what a call pays for its metrics.
func BenchmarkToolCall(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.ToolCall("files", "read_file", gateway.CallOK, gateway.CallTimes{Total: 2 * time.Millisecond, Upstream: time.Millisecond, Policy: 100 * time.Microsecond})
	}
}
