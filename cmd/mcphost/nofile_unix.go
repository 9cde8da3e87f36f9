//go:build unix

package main

import "syscall"

// openFilesLimit is the process's soft limit on open descriptors (the Go
// runtime has raised it to the hard limit at start), 0 if unknown.
func openFilesLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}
