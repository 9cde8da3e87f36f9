package plugins

import (
	"syscall"
	"unsafe"
)

// residentBytes is how much of buf the kernel backs with pages (mincore(2)),
// for buf at an address aligned to the page size.
func residentBytes(buf []byte) (int, bool) {
	if len(buf) == 0 {
		return 0, true
	}
	const page = 4096
	vec := make([]byte, (len(buf)+page-1)/page)
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(buf))),
		uintptr(len(buf)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if errno != 0 {
		return 0, false
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n * page, true
}
