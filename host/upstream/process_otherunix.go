//go:build unix && !linux

package upstream

import "syscall"

// serverProcAttr starts a stdio server in a process group of its own, which
// killGroup ends as one. Without Linux's Pdeathsig, a server outlives an
// mcphost that dies without cleaning up (SIGKILL, a crash).
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
