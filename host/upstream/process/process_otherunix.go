//go:build unix && !linux

package process

import "syscall"

// ProcAttr starts a stdio server in a process group of its own, which
// KillGroup ends as one. Without Linux's Pdeathsig, a server outlives an
// mcphost that dies without cleaning up (SIGKILL, a crash).
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
