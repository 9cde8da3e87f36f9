package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPercent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{4 << 20, 400},        // no plugins: capped
		{10 << 20, 300},       // 320% rounded down
		{20 << 20, 150},       // 160%
		{32 << 20, 100},       // 100% already gives the headroom
		{100 << 20, 100},      // plugins: never below 100
		{1 << 40, 100},        //
		{(32 << 20) / 3, 300}, // exactly 300
	} {
		if got := Percent(c.live, 32<<20, 400); got != c.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// The tuner follows the live heap the collector measured: high GOGC while
// it is small, 100 once it holds more than the headroom, and back. Not
// parallel: it sets the environment and GOGC, and measures the heap.
func TestTunerFollowsLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "") // set: Start must leave GOGC alone
	if tu := Start(); tu != nil {
		t.Fatal("Start tuned GOGC although the environment sets it")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	tu := &Tuner{Headroom: 16 << 20, MaxPercent: 400}
	runtime.GC()
	tu.Adjust()
	if got := tu.GCPercent(); got != 400 {
		t.Fatalf("small heap: GOGC %d, want 400", got)
	}
	if got := debug.SetGCPercent(400); got != 400 {
		t.Fatalf("runtime GOGC %d, want the tuner's 400", got)
	}

	live := make([]byte, 64<<20)
	runtime.GC()
	tu.Adjust()
	if got := tu.GCPercent(); got != 100 {
		t.Fatalf("with 64 MiB live: GOGC %d, want 100", got)
	}
	runtime.KeepAlive(live)

	live = nil
	runtime.GC()
	tu.Adjust()
	if got := tu.GCPercent(); got != 400 {
		t.Fatalf("after the heap shrank: GOGC %d, want 400", got)
	}
}
