package sessionless

import (
	"sync"
	"time"
)

// Workers run functions on goroutines kept between them. A call in rounds
// runs on a goroutine of its own (its upstream request must go on while a
// round waits for the client), and starting one for every call, then
// growing its stack through the whole call path, was a visible part of a
// 2026-07-28 call's cost in the profile (runtime.newstack, copystack).
// The zero value is ready; a worker idle for workerIdle ends.
type Workers struct {
	once sync.Once
	work chan func()
}

// workerIdle is how long a worker waits for more work before it ends.
const workerIdle = 10 * time.Second

// Go runs f on an idle worker, or on a new one when none is idle. f must
// not panic (the caller recovers).
func (w *Workers) Go(f func()) {
	w.once.Do(func() { w.work = make(chan func()) })
	select {
	case w.work <- f: // an idle worker took it
	default:
		go w.run(f)
	}
}

func (w *Workers) run(f func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		f = nil // nothing of the last call kept while idle
		idle.Reset(workerIdle)
		select {
		case f = <-w.work:
		case <-idle.C:
			return
		}
	}
}
