package plugins

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// evict tells the kernel that the pages of wasm need not stay resident,
// when wasm lies in a read-only mapping of a file: a module embedded in
// the executable as a string, as the built-ins are. Hashing and compiling
// read every page of it (5 MiB for the built-ins), which then stayed in
// the process's RSS although only a recompile reads them again, and a
// recompile faults them back in from the file. Anywhere else (the Go
// heap, a writable mapping) MADV_DONTNEED would discard data, so it is
// left alone; a read-only file mapping's pages are the file's, whole
// pages included, so the range is rounded out to pages.
func evict(wasm []byte) {
	if len(wasm) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(wasm)))
	end := start + uintptr(len(wasm))
	if !readOnlyFileMapping(start, end) {
		return
	}
	page := uintptr(os.Getpagesize())
	start &^= page - 1
	end = (end + page - 1) &^ (page - 1)
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, end-start, syscall.MADV_DONTNEED)
}

// readOnlyFileMapping reports whether [start, end) lies within one mapping
// of /proc/self/maps that is backed by a file and not writable.
func readOnlyFileMapping(start, end uintptr) bool {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 7f1c2e1d3000-7f1c2e1d5000 r--p 00000000 08:01 1234 /path
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 {
			continue // anonymous
		}
		lo, hi, ok := bytes.Cut(fields[0], []byte("-"))
		if !ok {
			continue
		}
		from, err1 := strconv.ParseUint(string(lo), 16, 64)
		to, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || start < uintptr(from) || start >= uintptr(to) {
			continue
		}
		perms, inode := fields[1], string(fields[4])
		return end <= uintptr(to) && len(perms) == 4 && perms[0] == 'r' && perms[1] == '-' && inode != "0"
	}
	return false
}
