package filters_test

import (
	"context"
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/plugins"
)

// TestModulePagesReleased checks that the embedded module's pages, which
// hashing and compiling it read, are not left resident once a runtime has
// compiled it: the module is read-only data of the executable, and the
// runtime lets its pages go (docs/BENCHMARKS.md, "Where the five
// built-ins' memory goes").
func TestModulePagesReleased(t *testing.T) {
	// Not parallel: the parallel tests read the module too.
	ctx := context.Background()
	r, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: t.TempDir(), Builtin: filters.Builtin})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	p, err := r.Load(ctx, spec("titles", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	mod := filters.Module()
	mapped, pages := mappedPages(t, mod)
	// Reading the read-only data beside the module maps its neighbours
	// again: the kernel's fault-around maps the cached pages of the 64 KiB
	// block around a fault, so up to 16 pages at each end.
	if limit := 2 * (64 << 10) / os.Getpagesize(); mapped > limit {
		t.Fatalf("%d of the module's %d pages are mapped in after it was compiled, want at most %d", mapped, pages, limit)
	}
}

// mappedPages counts the pages of b that are present in this process's
// page tables (/proc/self/pagemap, bit 63), whatever backs them. mincore(2)
// would not do: for a file mapping it reports the page cache.
func mappedPages(t *testing.T, b []byte) (mapped, pages int) {
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
	for i := 0; i < len(entries); i += 8 {
		if binary.LittleEndian.Uint64(entries[i:])&(1<<63) != 0 {
			mapped++
		}
	}
	return mapped, len(entries) / 8
}
