package bench

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec      string
		command   []string
		transport string
		want      Target
		err       string
	}{
		{spec: "http://127.0.0.1:7700/mcp", want: Target{Transport: TransportStreamable, URL: "http://127.0.0.1:7700/mcp"}},
		{spec: "http://127.0.0.1:7700/sse", want: Target{Transport: TransportSSE, URL: "http://127.0.0.1:7700/sse"}},
		{spec: "https://example.test/sse/", want: Target{Transport: TransportSSE, URL: "https://example.test/sse/"}},
		{spec: "http://127.0.0.1:7700/events", transport: "sse", want: Target{Transport: TransportSSE, URL: "http://127.0.0.1:7700/events"}},
		{spec: "http://127.0.0.1:7700/sse", transport: "http", want: Target{Transport: TransportStreamable, URL: "http://127.0.0.1:7700/sse"}},
		{spec: "stdio:./server -flag  x", want: Target{Transport: TransportStdio, Command: []string{"./server", "-flag", "x"}}},
		{command: []string{"go", "run", "./srv"}, want: Target{Transport: TransportStdio, Command: []string{"go", "run", "./srv"}}},
		{command: []string{"srv"}, transport: "stdio", want: Target{Transport: TransportStdio, Command: []string{"srv"}}},
		{err: "no target"},
		{spec: "stdio:", err: "needs a command"},
		{spec: "stdio:a", command: []string{"b"}, err: "not both"},
		{spec: "http://x/mcp", command: []string{"b"}, err: "not both"},
		{spec: "127.0.0.1:7700", err: "not an http(s) URL"},
		{spec: "ftp://x/mcp", err: "not an http(s) URL"},
		{spec: "http://x/mcp", transport: "stdio", err: "needs a command"},
		{command: []string{"srv"}, transport: "sse", err: "over stdio"},
		{spec: "http://x/mcp", transport: "websocket", err: "unknown transport"},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.spec, tt.command, tt.transport)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseTarget(%q, %q, %q) err = %v, want %q", tt.spec, tt.command, tt.transport, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseTarget(%q, %q, %q) = %+v, %v, want %+v", tt.spec, tt.command, tt.transport, got, err, tt.want)
		}
	}
}

func TestTargetString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		t    Target
		want string
	}{
		{Target{Transport: TransportStdio, Command: []string{"a", "b"}}, "stdio:a b"},
		{Target{Transport: TransportSSE, URL: "http://x/events"}, "http://x/events (sse)"},
		{Target{Transport: TransportSSE, URL: "http://x/sse"}, "http://x/sse"},
		{Target{Transport: TransportStreamable, URL: "http://x/mcp", Header: http.Header{"A": {"b"}}}, "http://x/mcp"},
	} {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.t, got, tt.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	var lat []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	got := Summarize(lat)
	want := Stats{Min: time.Millisecond, Mean: 50500 * time.Microsecond, P50: 50 * time.Millisecond, P90: 90 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
	if (Summarize(nil) != Stats{}) {
		t.Error("Summarize(nil) not zero")
	}
	one := Summarize([]time.Duration{7})
	if one.P50 != 7 || one.P99 != 7 || one.Min != 7 || one.Max != 7 {
		t.Errorf("one value: %+v", one)
	}
}

func TestPercentileMedian(t *testing.T) {
	t.Parallel()
	s := []float64{1, 2, 3, 4}
	for p, want := range map[float64]float64{0: 1, 25: 1, 26: 2, 50: 2, 75: 3, 99: 4, 100: 4} {
		if got := Percentile(s, p); got != want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", s, p, got, want)
		}
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("even median %v", got)
	}
	in := []int64{5, 1, 3}
	if got := Median(in); got != 3 || in[0] != 5 {
		t.Errorf("odd median %v, input now %v", got, in)
	}
	if Median[float64](nil) != 0 || Percentile[float64](nil, 50) != 0 {
		t.Error("empty input not zero")
	}
}
