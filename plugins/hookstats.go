package plugins

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// HookBuckets are the upper bounds of HookStats' latency buckets: a hook
// runs in microseconds when warm, up to its timeout when not.
var HookBuckets = []time.Duration{
	10 * time.Microsecond, 25 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond,
	250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond,
	time.Second,
}

// HookStats are the counters of one hook of one loaded plugin.
type HookStats struct {
	Plugin, Hook string
	Calls        uint64   // guest calls, failed ones included
	Failures     uint64   // of those, how many failed, of any kind
	Traps        uint64   // of the failures: traps and memory limits
	Timeouts     uint64   // of the failures: the hook's timeout
	Buckets      []uint64 // calls at most HookBuckets[i] long (cumulative, as Prometheus counts)
	Sum          time.Duration
}

// hookCounters is what a call updates, without a lock.
type hookCounters struct {
	calls, failures, traps, timeouts atomic.Uint64
	buckets                          []atomic.Uint64 // one per HookBuckets, not cumulative
	sum                              atomic.Int64    // nanoseconds
}

func newHookCounters(hooks map[string]bool) map[string]*hookCounters {
	m := make(map[string]*hookCounters, len(hooks))
	for h := range hooks {
		m[h] = &hookCounters{buckets: make([]atomic.Uint64, len(HookBuckets))}
	}
	return m
}

// recordHook counts one guest call of hook that took d and ended with err.
// A call its caller gave up on is not the plugin's doing and not counted.
func (p *Plugin) recordHook(hook string, d time.Duration, err error) {
	c := p.hookStats[hook]
	if c == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrClosed) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	c.calls.Add(1)
	c.sum.Add(int64(d))
	for i, b := range HookBuckets {
		if d <= b {
			c.buckets[i].Add(1)
			break
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrTimeout):
		c.failures.Add(1)
		c.timeouts.Add(1)
	case errors.Is(err, ErrTrap):
		c.failures.Add(1)
		c.traps.Add(1)
	default:
		c.failures.Add(1)
	}
}

// HookStats returns the counters of each hook the plugin implements, in no
// particular order. They start from zero when the plugin is loaded.
func (p *Plugin) HookStats() []HookStats {
	out := make([]HookStats, 0, len(p.hookStats))
	for hook, c := range p.hookStats {
		s := HookStats{Plugin: p.spec.Name, Hook: hook, Calls: c.calls.Load(), Failures: c.failures.Load(),
			Traps: c.traps.Load(), Timeouts: c.timeouts.Load(), Sum: time.Duration(c.sum.Load()),
			Buckets: make([]uint64, len(HookBuckets))}
		var cum uint64
		for i := range c.buckets {
			cum += c.buckets[i].Load()
			s.Buckets[i] = cum
		}
		out = append(out, s)
	}
	return out
}

// HookStats returns the hook counters of the chain's plugins.
func (c *Chain) HookStats() []HookStats {
	var out []HookStats
	for _, p := range c.plugins {
		out = append(out, p.HookStats()...)
	}
	return out
}

// HookStats returns the hook counters of the current chain's plugins.
func (m *Manager) HookStats() []HookStats {
	c := m.acquire()
	if c == nil {
		return nil
	}
	defer c.release()
	return c.HookStats()
}
