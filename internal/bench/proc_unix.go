//go:build unix

package bench

import "syscall"

// groupAttr starts a process in a process group of its own, which
// signalGroup reaches as one.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends SIGTERM, or SIGKILL if kill, to the group pgid.
func signalGroup(pgid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pgid, sig)
}
