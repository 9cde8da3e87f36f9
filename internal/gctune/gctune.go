// Package gctune paces the Go collector by bytes of headroom rather than
// by a percentage of the live heap alone.
//
// GOGC=100 lets a heap grow by as much as it holds live before the next
// collection. A gateway without plugins holds a few MB live and allocates
// some 100 KB per call (the go-sdk's decode buffers), so with GOGC=100 it
// collects every few dozen calls and a fifth of its CPU goes to the
// collector. A process with a large live heap (plugin linear memories, where
// they are Go slices) collects rarely anyway. Tuner raises GOGC, up to a cap,
// while the live heap is small, so that at least Headroom bytes are
// allocated between collections, and leaves it at 100 once the heap is
// large enough that 100 already gives that much.
package gctune

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Defaults: 32 MiB of headroom, at most GOGC=400, checked every second.
const (
	DefaultHeadroom   = 32 << 20
	DefaultMaxPercent = 400
	DefaultInterval   = time.Second
)

// Tuner keeps GOGC between 100 and MaxPercent.
type Tuner struct {
	Headroom   uint64
	MaxPercent int
	Interval   time.Duration

	mu      sync.Mutex
	percent int // as last set; 0 before the first Adjust
	sample  []metrics.Sample
	stop    chan struct{}
	done    chan struct{}
}

// Start returns a running Tuner with the defaults, or nil when the GOGC
// environment variable is set: an operator's GOGC is left alone.
func Start() *Tuner {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	t := &Tuner{Headroom: DefaultHeadroom, MaxPercent: DefaultMaxPercent, Interval: DefaultInterval}
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

// Adjust sets GOGC for the live heap as the last collection measured it;
// call it after a step that changes the live heap a lot (loading plugins)
// rather than wait for the next check. A nil Tuner does nothing.
func (t *Tuner) Adjust() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sample == nil {
		t.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	}
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return // a runtime without the metric: keep GOGC as it is
	}
	p := Percent(t.sample[0].Value.Uint64(), t.Headroom, t.MaxPercent)
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
	if live == 0 {
		return maxPercent
	}
	p := headroom * 100 / live
	if p >= uint64(maxPercent) {
		return maxPercent
	}
	return max(100, int(p)/25*25)
}
