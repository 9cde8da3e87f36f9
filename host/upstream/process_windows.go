package upstream

import (
	"os"
	"syscall"
	"time"
)

// serverProcAttr: Windows has no process groups that a signal ends, so a
// stdio server is started as any child.
func serverProcAttr() *syscall.SysProcAttr { return nil }

// killGroup ends the server itself, at once: Windows has no SIGTERM to
// send first, and no group to reach its children through (they outlive it).
func killGroup(pid int, _ time.Duration) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
