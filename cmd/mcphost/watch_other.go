//go:build !linux

package main

// openForWriting cannot tell on this system; the settle interval alone
// applies.
func openForWriting(string) bool { return false }
