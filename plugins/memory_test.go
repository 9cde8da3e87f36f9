package plugins

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

func TestLinearMemoryGrowsInPlaceUpToTheLimit(t *testing.T) {
	t.Parallel()
	lim := &memLimiter{limit: 8 << 20}
	m := lim.Allocate(0, 1<<32).(*linearMemory)
	defer m.Free()
	buf := m.Reallocate(64 << 10)
	if len(buf) != 64<<10 {
		t.Fatalf("len %d, want %d", len(buf), 64<<10)
	}
	buf[0], buf[len(buf)-1] = 1, 2
	grown := m.Reallocate(4 << 20)
	if len(grown) != 4<<20 || grown[0] != 1 || grown[64<<10-1] != 2 || grown[len(grown)-1] != 0 {
		t.Fatal("growing lost or dirtied memory")
	}
	if runtime.GOOS == "linux" && unsafe.SliceData(grown) != unsafe.SliceData(buf) {
		t.Error("memory moved when it grew within its reservation")
	}
	if got := m.Reallocate(8<<20 + 64<<10); got != nil || !lim.refused.Load() {
		t.Fatalf("a grow past the limit returned %d bytes, refused=%v", len(got), lim.refused.Load())
	}
	if got := m.Reallocate(8 << 20); len(got) != 8<<20 {
		t.Fatalf("a grow to exactly the limit returned %d bytes", len(got))
	}
}

func TestLinearMemoryDeclaredMinimumAboveTheLimit(t *testing.T) {
	t.Parallel()
	lim := &memLimiter{limit: 8 << 20}
	m := lim.Allocate(0, 1<<32)
	defer m.Free()
	// wazero panics if the minimum is refused: it is allocated, and the
	// instantiation fails afterwards on tooBig.
	if got := m.Reallocate(16 << 20); len(got) != 16<<20 || !lim.tooBig.Load() {
		t.Fatalf("got %d bytes, tooBig=%v", len(got), lim.tooBig.Load())
	}
}

// A memory freed while its instance runs guest code (a runtime closed under
// a call) stays mapped until the call returns.
func TestLinearMemoryFreedDuringACallIsReleasedAfterIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reservations are linux-only")
	}
	lim := &memLimiter{limit: 8 << 20}
	m := lim.Allocate(0, 1<<32).(*linearMemory)
	buf := m.Reallocate(64 << 10)
	if m.unmap == nil {
		t.Fatal("no reservation")
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	lim.enter()
	m.Free()
	if !mapped(t, addr) {
		t.Fatal("unmapped while a call was running")
	}
	buf[0] = 1 // the running guest may still write
	lim.leave()
	if mapped(t, addr) {
		t.Fatal("still mapped after the call returned")
	}
	m2 := lim.Allocate(0, 1<<32).(*linearMemory)
	buf2 := m2.Reallocate(64 << 10)
	addr2 := uintptr(unsafe.Pointer(unsafe.SliceData(buf2)))
	m2.Free()
	if mapped(t, addr2) {
		t.Fatal("a memory freed outside a call stayed mapped")
	}
}

// mapped reports whether addr lies in a mapping of this process.
func mapped(t *testing.T, addr uintptr) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err == nil && lo <= addr && addr < hi {
			return true
		}
	}
	return false
}
