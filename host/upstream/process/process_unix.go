//go:build unix

package process

import (
	"errors"
	"syscall"
	"time"
)

// KillGroup sends SIGTERM to the group, waits up to grace for it to empty,
// then sends SIGKILL.
func KillGroup(pgid int, grace time.Duration) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // no such group: everyone already exited
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
