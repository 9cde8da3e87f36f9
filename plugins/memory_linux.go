package plugins

import "syscall"

// reserve maps size bytes of private, zeroed memory that the kernel backs
// only as it is touched (MAP_NORESERVE: no swap is set aside for pages never
// written). ok is false when the mapping is refused (an address-space
// limit, strict overcommit); the caller then falls back to the Go heap.
//
// The mapping asks for transparent huge pages: a Go guest writes some 6 MB
// of data segments and heap while it starts, and taking those as 4 KiB page
// faults cost as much as the copying the reservation saves
// (BenchmarkInstance, docs/BENCHMARKS.md). Where THP is off, the advice is
// ignored.
func reserve(size uint64) (buf []byte, unmap func(), ok bool) {
	const page = 64 << 10 // a Wasm page, a multiple of every OS page size
	size = (size + page - 1) &^ (page - 1)
	if size == 0 || size > 1<<40 {
		return nil, nil, false
	}
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, nil, false
	}
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	return b[:0], func() { _ = syscall.Munmap(b) }, true
}
