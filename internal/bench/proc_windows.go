package bench

import (
	"os"
	"syscall"
)

// groupAttr: Windows has no process groups that a signal ends.
func groupAttr() *syscall.SysProcAttr { return nil }

// signalGroup ends the process itself, at once, whether kill or not:
// Windows has no SIGTERM to send first, nor a group to reach children by.
func signalGroup(pid int, _ bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
