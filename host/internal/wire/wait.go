package wire

import (
	"context"
	"time"
)

// WaitUntil polls until done reports true, or ctx ends; it reports
// whether done did.
func WaitUntil(ctx context.Context, done func() bool) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}
