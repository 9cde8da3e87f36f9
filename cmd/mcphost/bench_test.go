package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/internal/bench"
)

// buildEverything builds the go-sdk's conformance server for a test.
func buildEverything(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "everything-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput()
	if err != nil {
		t.Fatalf("building everything-server: %v\n%s", err, out)
	}
	return bin
}

func TestBenchCommand(t *testing.T) {
	srv := buildEverything(t)
	ctx := context.Background()

	t.Run("json after --", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		err := run(ctx, []string{"bench", "--tool", "test_simple_text", "--calls", "20", "--concurrency", "2", "--warmup", "3", "--json", "--", srv}, nil, &stdout, &stderr)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		var res struct {
			Target      string  `json:"target"`
			Calls       int     `json:"calls"`
			Failures    int     `json:"failures"`
			Concurrency int     `json:"concurrency"`
			Warmup      int     `json:"warmup"`
			P50         int64   `json:"p50_ns"`
			P99         int64   `json:"p99_ns"`
			CallsPerSec float64 `json:"calls_per_sec"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("%v: %s", err, stdout.String())
		}
		if res.Calls != 20 || res.Failures != 0 || res.Concurrency != 2 || res.Warmup != 3 || res.P50 <= 0 || res.P99 < res.P50 || res.CallsPerSec <= 0 {
			t.Errorf("result %+v", res)
		}
		if res.Target != "stdio:"+srv {
			t.Errorf("target %q", res.Target)
		}
	})

	t.Run("text with stdio:", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if err := run(ctx, []string{"bench", "stdio:" + srv, "--tool", "test_simple_text", "--calls", "10"}, nil, &stdout, &stderr); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		for _, want := range []string{"calls        10 in", "failures     0", "p50 ", "p90 ", "p99 ", "calls/s "} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, stdout.String())
			}
		}
		if stderr.Len() != 0 {
			t.Errorf("stderr on a short run: %q", stderr.String())
		}
	})

	t.Run("rate", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		err := run(ctx, []string{"bench", "--tool", "test_simple_text", "--rate", "2000", "--calls", "30", "--warmup", "2", "--json", "--", srv}, nil, &stdout, &stderr)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		var res struct {
			Calls       int     `json:"calls"`
			Failures    int     `json:"failures"`
			Concurrency int     `json:"concurrency"`
			Rate        float64 `json:"rate"`
			MaxInFlight int     `json:"max_in_flight"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("%v: %s", err, stdout.String())
		}
		// Without --concurrency, a paced run may have up to the default in flight.
		if res.Calls != 30 || res.Failures != 0 || res.Rate != 2000 || res.Concurrency != bench.DefaultRateWorkers || res.MaxInFlight < 1 {
			t.Errorf("result %+v", res)
		}

		stdout.Reset()
		stderr.Reset()
		if err := run(ctx, []string{"bench", "stdio:" + srv, "--tool", "test_simple_text", "--rate", "1000", "--concurrency", "3", "--calls", "10"}, nil, &stdout, &stderr); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		for _, want := range []string{"(1000 calls/s scheduled, up to 3 in flight, at most ", "calls        10 in", "scheduled start"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, stdout.String())
			}
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		err := run(ctx, []string{"bench", "--tool", "nope", "--", srv}, nil, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "nope") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "http://127.0.0.1:1/mcp"},                                 // no --tool
		{"bench", "--tool", "x"},                                            // no target
		{"bench", "--tool", "x", "a", "b"},                                  // two targets
		{"bench", "--tool", "x", "127.0.0.1:1"},                             // not a URL
		{"bench", "--tool", "x", "--args", "[1]", "http://127.0.0.1:1/mcp"}, // not an object
		{"bench", "--tool", "x", "--concurrency", "0", "http://127.0.0.1:1/mcp"},
		{"bench", "--tool", "x", "--rate", "-1", "http://127.0.0.1:1/mcp"},
		{"bench", "--tool", "x", "--rate", "fast", "http://127.0.0.1:1/mcp"},
		{"bench", "--tool", "x", "--"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, nil, &stdout, &stderr)
		var ee exitError
		if !errors.As(err, &ee) || ee != 2 {
			t.Errorf("%q: err = %v, want exit status 2", args, err)
		}
		if stderr.Len() == 0 {
			t.Errorf("%q: nothing on stderr", args)
		}
	}
}
