//go:build !unix

package main

// openFilesLimit is unknown where there is no RLIMIT_NOFILE.
func openFilesLimit() uint64 { return 0 }
