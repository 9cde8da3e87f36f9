//go:build linux

package bench

import (
	"context"
	"syscall"
	"time"
)

// sleepUntil waits until t, and reports false if ctx ended first. It
// sleeps in nanosleep(2), which wakes within about a tenth of a
// millisecond: a Go timer fires up to a millisecond late, because the
// runtime waits for timers in epoll_wait(2), whose timeout is in whole
// milliseconds, and a paced run, which measures from the scheduled start,
// would count that half a millisecond on average in every latency.
func sleepUntil(ctx context.Context, t time.Time) bool {
	for ctx.Err() == nil {
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		// In slices, so that an ended ctx is noticed; an interrupted
		// sleep goes round again.
		ts := syscall.NsecToTimespec(int64(min(d, 20*time.Millisecond)))
		_ = syscall.Nanosleep(&ts, nil)
	}
	return false
}
