package plugins

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// TestEvict checks that evict lets go of the pages of a read-only file
// mapping, whose contents read the same afterwards, and leaves memory
// whose contents would be lost alone: the Go heap and a written private
// file mapping.
func TestEvict(t *testing.T) {
	want := make([]byte, 1<<20)
	_, _ = rand.Read(want)
	path := filepath.Join(t.TempDir(), "module")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	mapFile := func(prot int) []byte {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := syscall.Mmap(int(f.Fd()), 0, len(want), prot, syscall.MAP_PRIVATE)
		if err != nil {
			t.Skip("mmap:", err)
		}
		t.Cleanup(func() { _ = syscall.Munmap(b) })
		return b
	}

	ro := mapFile(syscall.PROT_READ)
	if !bytes.Equal(ro, want) {
		t.Fatal("the mapping does not read as the file")
	}
	if n := mappedPages(t, ro); n == 0 {
		t.Fatal("reading the mapping mapped no page")
	}
	evict(ro)
	if n := mappedPages(t, ro); n != 0 {
		t.Errorf("evict left %d pages of a read-only file mapping mapped, want 0", n)
	}
	if !bytes.Equal(ro, want) {
		t.Error("a read-only file mapping reads differently after evict")
	}

	rw := mapFile(syscall.PROT_READ | syscall.PROT_WRITE)
	for i := range rw {
		rw[i] ^= 0xff
	}
	before := mappedPages(t, rw)
	evict(rw)
	if n := mappedPages(t, rw); n != before {
		t.Errorf("evict changed a writable mapping: %d pages mapped, then %d", before, n)
	}
	for i := range rw {
		if rw[i] != want[i]^0xff {
			t.Fatalf("a written private file mapping lost its data at byte %d", i)
		}
	}

	heap := bytes.Clone(want)
	evict(heap)
	if !bytes.Equal(heap, want) {
		t.Error("evict changed a heap slice")
	}
	evict(nil)
}

// mappedPages counts the pages of b present in this process's page
// tables (/proc/self/pagemap, bit 63). mincore(2) would not do: for a file
// mapping it reports the page cache.
func mappedPages(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	page := uintptr(os.Getpagesize())
	first := uintptr(unsafe.Pointer(unsafe.SliceData(b))) / page
	last := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b)) - 1) / page
	entries := make([]byte, 8*(last-first+1))
	if _, err := f.ReadAt(entries, int64(first*8)); err != nil {
		t.Skip("reading /proc/self/pagemap:", err)
	}
	n := 0
	for i := 0; i < len(entries); i += 8 {
		if binary.LittleEndian.Uint64(entries[i:])&(1<<63) != 0 {
			n++
		}
	}
	return n
}
