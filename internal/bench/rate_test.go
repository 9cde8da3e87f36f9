package bench

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		opts Options
		err  string
	}{
		{Options{Tool: "t"}, ""},
		{Options{Tool: "t", Rate: 200, Duration: time.Second}, ""},
		{Options{Tool: "t", Rate: 0.5, Concurrency: 3, Calls: 10, Warmup: -1}, ""},
		{Options{}, "no tool"},
		{Options{Tool: "t", Calls: -1}, "calls -1"},
		{Options{Tool: "t", Duration: -time.Second}, "duration -1s"},
		{Options{Tool: "t", Concurrency: -2}, "concurrency -2"},
		{Options{Tool: "t", Rate: -1}, "rate -1"},
		{Options{Tool: "t", Rate: math.NaN()}, "rate NaN"},
		{Options{Tool: "t", Rate: math.Inf(1)}, "rate +Inf"},
	} {
		err := tt.opts.Validate()
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%+v: err = %v, want %q", tt.opts, err, tt.err)
		}
	}
	// Run checks the options before it touches the session.
	if _, err := Run(context.Background(), nil, Options{Tool: "t", Rate: -5}); err == nil || !strings.Contains(err.Error(), "rate") {
		t.Errorf("Run with a negative rate: err = %v", err)
	}
}

// counter is a call that counts, and fails every failEvery-th call if set.
type counter struct {
	n         atomic.Int64
	failEvery int64
}

func (c *counter) call() error {
	if k := c.n.Add(1); c.failEvery > 0 && k%c.failEvery == 0 {
		return errors.New("boom")
	}
	return nil
}

func TestPacedCalls(t *testing.T) {
	t.Parallel()
	var c counter
	res, err := measure(context.Background(), c.call, Options{Tool: "t", Rate: 20000, Calls: 37, Warmup: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Run makes the first warm-up call itself; measure the other three.
	if got := c.n.Load(); got != 37+3 {
		t.Errorf("%d calls made, want 40", got)
	}
	if res.Calls != 37 || res.Failures != 0 || res.Rate != 20000 || res.Concurrency != DefaultRateWorkers || res.Warmup != 4 {
		t.Errorf("result %+v", res)
	}
	if res.MaxInFlight < 1 || res.MaxInFlight > DefaultRateWorkers {
		t.Errorf("max in flight %d", res.MaxInFlight)
	}
}

// A run bounded by time makes the calls its schedule has room for, however
// long they take: starts at 0, 1, ..., 49 ms of a 50 ms run.
func TestPacedDuration(t *testing.T) {
	t.Parallel()
	var c counter
	res, err := measure(context.Background(), c.call, Options{Tool: "t", Rate: 1000, Duration: 50 * time.Millisecond, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 50 || c.n.Load() != 50 {
		t.Errorf("%d calls measured, %d made, want 50", res.Calls, c.n.Load())
	}
	// With Calls too, whichever ends first.
	c.n.Store(0)
	res, err = measure(context.Background(), c.call, Options{Tool: "t", Rate: 1000, Duration: time.Hour, Calls: 12, Warmup: -1})
	if err != nil || res.Calls != 12 {
		t.Errorf("calls and duration: %v, %+v", err, res)
	}
}

func TestPacedFailures(t *testing.T) {
	t.Parallel()
	c := counter{failEvery: 3}
	res, err := measure(context.Background(), c.call, Options{Tool: "t", Rate: 20000, Calls: 30, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 30 || res.Failures != 10 || res.FirstError != "boom" {
		t.Errorf("calls %d failures %d first error %q", res.Calls, res.Failures, res.FirstError)
	}
}

// The next start does not wait for a slow call: the first measured call
// returns only once the fifth has started, which a closed loop with one
// call in flight would never reach.
func TestPacedOpenLoop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not a measurement
	defer cancel()
	release := make(chan struct{})
	var n atomic.Int64
	call := func() error {
		switch n.Add(1) {
		case 1:
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		case 5:
			close(release)
		}
		return nil
	}
	res, err := measure(ctx, call, Options{Tool: "t", Rate: 10000, Calls: 10, Concurrency: 8, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 10 || res.Failures != 0 {
		t.Errorf("calls %d failures %d (%s)", res.Calls, res.Failures, res.FirstError)
	}
	if res.MaxInFlight < 2 || res.MaxInFlight > 8 {
		t.Errorf("max in flight %d, want 2 to 8", res.MaxInFlight)
	}
	if res.Min < 0 || res.Max < res.P50 {
		t.Errorf("stats %+v", res.Stats)
	}
}

// Concurrency caps the calls in flight: two workers, at a rate that keeps
// both busy, never run a third call at once.
func TestPacedWorkerCap(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	call := func() error { n.Add(1); return nil }
	res, err := measure(context.Background(), call, Options{Tool: "t", Rate: 50000, Calls: 200, Concurrency: 2, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 200 || res.Concurrency != 2 || res.MaxInFlight > 2 {
		t.Errorf("calls %d concurrency %d max in flight %d", res.Calls, res.Concurrency, res.MaxInFlight)
	}
}

func TestPacedCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	call := func() error {
		if n.Add(1) == 3 {
			cancel()
		}
		return nil
	}
	_, err := measure(ctx, call, Options{Tool: "t", Rate: 1000, Duration: time.Hour, Warmup: -1})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
