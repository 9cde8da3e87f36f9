package plugins

import "syscall"

// reserve maps size bytes of private, zeroed memory that the kernel backs
// only as it is touched (MAP_NORESERVE: no swap is set aside for pages never
// written). ok is false when the mapping is refused (an address-space
// limit, strict overcommit); the caller then falls back to the Go heap.
//
// The mapping takes 4 KiB pages, not transparent huge pages: a built-in
// instance touches 3.3 MB of its first 5 MB, which huge pages round up to
// 6 MB, for 1 ms less to make it (BenchmarkInstance, docs/BENCHMARKS.md).
// An instance is made once and serves many calls; its memory stays.
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
	// Where THP is "always", ask for small pages all the same.
	_ = syscall.Madvise(b, syscall.MADV_NOHUGEPAGE)
	return b[:0], func() { _ = syscall.Munmap(b) }, true
}
