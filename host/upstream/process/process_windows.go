package process

import (
	"os"
	"syscall"
	"time"
)

// ProcAttr: Windows has no process groups that a signal ends, so a
// stdio server is started as any child.
func ProcAttr() *syscall.SysProcAttr { return nil }

// KillGroup ends the server itself, at once: Windows has no SIGTERM to
// send first, and no group to reach its children through (they outlive it).
func KillGroup(pid int, _ time.Duration) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
