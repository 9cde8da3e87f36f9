package main

import (
	"os"
	"syscall"
)

// openForWriting reports whether any process has path open for writing.
// Linux refuses a read lease (F_SETLEASE, F_RDLCK) on such a file with
// EAGAIN; the lease, when granted, is dropped at once. Where a lease cannot
// be taken at all (a file this user does not own, a file system without
// leases) it reports false and the settle interval alone applies.
func openForWriting(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false // gone or unreadable: the reload reports it
	}
	defer f.Close()
	fd := f.Fd()
	_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETLEASE, syscall.F_RDLCK)
	if errno == 0 {
		syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETLEASE, syscall.F_UNLCK)
		return false
	}
	return errno == syscall.EAGAIN
}
