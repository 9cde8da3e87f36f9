package process

import "syscall"

// serverProcAttr starts a stdio server in a process group of its own, which
// killGroup ends as one; Pdeathsig ends the server if mcphost itself dies
// without cleaning up. Linux sends it when the *thread* that started the
// server exits, so no code in mcphost may end a goroutine still locked to
// its OS thread (which ends the thread): a reload that did so, to run at a
// lower priority, killed upstreams at random.
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
