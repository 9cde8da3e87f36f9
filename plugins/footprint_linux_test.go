package plugins

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkBuiltinFootprint loads the built-in policies' module in a
// fresh runtime (warm compilation cache) and reports what the compiled
// module keeps while it is loaded: wazero's machine code (the process's
// anonymous executable mappings, machine-code-KiB) and the Go heap
// (heap-KiB, live after collection: mostly wazero's decoded module). The
// module's own bytes, read before the runtime is made, are not counted.
// The first load is the one measured: wazero unmaps a closed module's
// machine code from a finalizer, at some collection after.
// docs/BENCHMARKS.md, "Where the five built-ins' memory goes".
func BenchmarkBuiltinFootprint(b *testing.B) {
	for _, interp := range []bool{false, true} {
		b.Run("engine="+engineName(interp), func(b *testing.B) { benchBuiltinFootprint(b, interp) })
	}
}

func benchBuiltinFootprint(b *testing.B, interpreter bool) {
	wasm, err := os.ReadFile("../filters/builtin.wasm")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	ctx := context.Background()
	code, heap, measured := 0, 0, false
	for b.Loop() {
		h0 := liveHeapKiB()
		x0 := anonExecKiB(b)
		rt, err := NewRuntime(ctx, RuntimeOptions{Interpreter: interpreter, CacheDir: dir, Logger: testLogger(b), Builtin: func(string) ([]byte, map[string]string, bool) {
			return wasm, map[string]string{"mcphost.builtin": "titles"}, true
		}})
		if err != nil {
			b.Fatal(err)
		}
		p, err := rt.Load(ctx, Spec{Name: "titles", Source: "builtin:titles", Instances: 1})
		if err != nil {
			b.Fatal(err)
		}
		p.shrinkIdle(time.Now().Add(time.Hour)) // only the compiled module is left
		if !measured {
			code, heap, measured = anonExecKiB(b)-x0, liveHeapKiB()-h0, true
		}
		p.Close(ctx)
		rt.Close(ctx)
	}
	b.ReportMetric(float64(code), "machine-code-KiB")
	b.ReportMetric(float64(heap), "heap-KiB")
}

// anonExecKiB sums the resident anonymous executable mappings of the
// process (/proc/self/smaps): wazero's machine code.
func anonExecKiB(b *testing.B) int {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		b.Skip(err)
	}
	sum, counting := 0, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 5 && bytes.IndexByte(f[0], '-') > 0 && !bytes.HasSuffix(f[0], []byte(":")) {
			counting = len(f) == 5 && bytes.IndexByte(f[1], 'x') >= 0 // no path: anonymous
			continue
		}
		if counting && len(f) == 3 && string(f[0]) == "Rss:" {
			n, _ := strconv.Atoi(string(f[1]))
			sum += n
		}
	}
	return sum
}

func liveHeapKiB() int {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int(ms.HeapAlloc >> 10)
}
