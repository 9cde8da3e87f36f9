// Package gctune paces the Go collector by bytes of headroom rather than
// by a percentage of the live heap alone.
//
// GOGC=100 lets a heap grow by as much as it holds live before the next
// collection. A gateway without plugins holds a few MB live; on the go-sdk's
// own paths it allocates some 400 KB per call (its 32 KiB decode buffers),
// so with GOGC=100 it would collect every few dozen calls and spend a fifth
// of its CPU in the collector. On mcphost's fast paths a call allocates
// some 8 KB, and GOGC=100 costs nothing measurable while a higher one keeps
// megabytes of garbage resident: the runtime's smallest heap goal is 4 MB
// times GOGC/100, 16 MB at 400. So Tuner sizes the headroom by the
// allocation rate: what the process allocates in Spacing (100 ms) at the
// rate since the last check, up to Headroom, and raises GOGC, up to a cap,
// while the live heap is small next to it; it leaves GOGC at 100 when 100
// already gives that much, or when the process allocates little.
package gctune

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Defaults: at most 32 MiB of headroom, what 100 ms of allocation takes,
// at most GOGC=400, checked every second.
const (
	DefaultHeadroom   = 32 << 20
	DefaultSpacing    = 100 * time.Millisecond
	DefaultMaxPercent = 400
	DefaultInterval   = time.Second
)

// Tuner keeps GOGC between 100 and MaxPercent.
type Tuner struct {
	// Headroom is the most headroom the tuner gives.
	Headroom uint64
	// Spacing is the least time between collections the tuner aims
	// for: the headroom is what the process allocates in Spacing at the
	// rate measured since the last check, up to Headroom. Zero means
	// Headroom always.
	Spacing    time.Duration
	MaxPercent int
	Interval   time.Duration

	mu         sync.Mutex
	percent    int // as last set; 0 before the first Adjust
	sample     []metrics.Sample
	lastAllocs uint64    // cumulative bytes allocated, at lastAt
	lastAt     time.Time // of the last Adjust
	stop       chan struct{}
	done       chan struct{}
}

// Start returns a running Tuner with the defaults, or nil when the GOGC
// environment variable is set: an operator's GOGC is left alone.
func Start() *Tuner {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	t := &Tuner{Headroom: DefaultHeadroom, Spacing: DefaultSpacing, MaxPercent: DefaultMaxPercent, Interval: DefaultInterval}
	t.Adjust()
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go t.loop()
	return t
}

func (t *Tuner) loop() {
	defer close(t.done)
	tick := time.NewTicker(t.Interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.Adjust()
		case <-t.stop:
			return
		}
	}
}

// Stop ends the checks and restores GOGC=100. A nil Tuner does nothing.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	debug.SetGCPercent(100)
	t.percent = 100
}

// Adjust sets GOGC for the live heap as the last collection measured it,
// and the allocation rate since the last Adjust; call it after a step that
// changes the live heap a lot (loading plugins) rather than wait for the
// next check. A nil Tuner does nothing.
func (t *Tuner) Adjust() {
	if t == nil {
		return
	}
	t.adjust(time.Now())
}

func (t *Tuner) adjust(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sample == nil {
		t.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	}
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return // a runtime without the metric: keep GOGC as it is
	}
	headroom := t.Headroom
	if t.Spacing > 0 && t.sample[1].Value.Kind() == metrics.KindUint64 {
		allocs := t.sample[1].Value.Uint64()
		headroom = 0 // the first check knows no rate: no headroom yet
		if elapsed := now.Sub(t.lastAt); !t.lastAt.IsZero() && elapsed > 0 && allocs > t.lastAllocs {
			rate := float64(allocs-t.lastAllocs) / elapsed.Seconds()
			headroom = uint64(min(float64(t.Headroom), rate*t.Spacing.Seconds()))
		}
		t.lastAllocs, t.lastAt = allocs, now
	}
	p := Percent(t.sample[0].Value.Uint64(), headroom, t.MaxPercent)
	if p != t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
}

// GCPercent is the GOGC the Tuner last set, 0 if none.
func (t *Tuner) GCPercent() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// Percent is the GOGC that lets a heap of live bytes grow by at least
// headroom bytes before the next collection, between 100 and maxPercent,
// rounded down to a multiple of 25 so that small changes in the live heap
// do not reset it every check.
func Percent(live, headroom uint64, maxPercent int) int {
	if headroom == 0 {
		return 100
	}
	if live == 0 {
		return maxPercent
	}
	p := headroom * 100 / live
	if p >= uint64(maxPercent) {
		return maxPercent
	}
	return max(100, int(p)/25*25)
}
