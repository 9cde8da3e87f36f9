package wasmrewrite

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/mcphost-project/mcphost/plugins/internal/wasmrewrite/wasmtest"
)

// Hand-assembled modules for the loop instrumentation (instrument.go).

// The assemblers of wasmtest, under short names: the modules below are
// written with them by the hundred.
var (
	wmod  = wasmtest.Module
	sec   = wasmtest.Section
	wname = wasmtest.Name
	cat   = wasmtest.Cat
	fbody = wasmtest.Body
)

const (
	tI64I64  = 0 // (i64) -> i64
	tVoidI32 = 1 // () -> i32
	tI32I32  = 2 // (i32) -> i32
	tI32x2   = 3 // (i32, i32) -> (i32, i32)
)

var testTypes = sec(1, 4,
	[]byte{0x60, 1, 0x7E, 1, 0x7E},
	[]byte{0x60, 0, 1, 0x7F},
	[]byte{0x60, 1, 0x7F, 1, 0x7F},
	[]byte{0x60, 2, 0x7F, 0x7F, 2, 0x7F, 0x7F},
)

// lengthImport imports extism:host/env length (i64) -> i64 as function 0.
var lengthImport = cat(wname(loopCheckModule), wname("length"), []byte{0x00, tI64I64})

// countLoop is a function of type (i32) -> i32 that loops n times (its
// argument) and returns n: local 1 counts.
var countLoop = fbody([]byte{1, 1, 0x7F},
	0x02, 0x40, // block
	0x03, 0x40, // loop
	0x20, 0x01, 0x20, 0x00, 0x4E, 0x0D, 0x01, // local1 >= n: br_if 1
	0x20, 0x01, 0x41, 0x01, 0x6A, 0x21, 0x01, // local1++
	0x0C, 0x00, // br 0
	0x0B, 0x0B,
	0x20, 0x01, 0x0B)

// checkHost instantiates a fake extism:host/env whose length counts the
// loop checks; names lists extra (i64) -> i64 imports to define.
func checkHost(t *testing.T, r wazero.Runtime, checks *int) {
	t.Helper()
	b := r.NewHostModuleBuilder(loopCheckModule)
	for _, name := range []string{"length", "length_unsafe", "alloc"} {
		b.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, s []uint64) {
			if s[0] == LoopCheckArg {
				*checks++
			}
			s[0] = 7
		}), []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI64}).Export(name)
	}
	if _, err := b.Instantiate(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// runBoth instantiates wasm and its instrumented form and calls export with
// params in each, returning both results and the number of checks the
// instrumented one made. It fails the test if the instrumentation refuses.
func runBoth(t *testing.T, wasm []byte, export string, params ...uint64) (orig, inst []uint64, checks int) {
	t.Helper()
	return runBothMode(t, wasm, true, export, params...)
}

// runBothMode is runBoth with loops instrumented or not (instrument).
func runBothMode(t *testing.T, wasm []byte, loops bool, export string, params ...uint64) (orig, inst []uint64, checks int) {
	t.Helper()
	return compileBoth(t, wasm, loops)(export, params...)
}

// compileBoth compiles wasm and its instrumented form once, for many
// calls: the function it returns is runBothMode's, each call in a new
// instance of each.
func compileBoth(t *testing.T, wasm []byte, loops bool) func(export string, params ...uint64) (orig, inst []uint64, checks int) {
	t.Helper()
	out, err := Instrument(wasm, loops)
	if err != nil {
		t.Fatalf("instrument: %v", err)
	}
	ctx := context.Background()
	// compile returns a function that instantiates wasm and calls export.
	compile := func(wasm []byte, checks *int) func(export string, params ...uint64) []uint64 {
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(false))
		t.Cleanup(func() { r.Close(ctx) })
		checkHost(t, r, checks)
		if _, err := r.InstantiateWithConfig(ctx, globalModule, wazero.NewModuleConfig().WithName("g")); err != nil {
			t.Fatal(err)
		}
		cm, err := r.CompileModule(ctx, wasm)
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		return func(export string, params ...uint64) []uint64 {
			t.Helper()
			m, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				t.Fatalf("instantiate: %v", err)
			}
			defer m.Close(ctx)
			res, err := m.ExportedFunction(export).Call(ctx, params...)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			return res
		}
	}
	var none, checks int
	runOrig, runInst := compile(wasm, &none), compile(out, &checks)
	return func(export string, params ...uint64) (orig, inst []uint64, n int) {
		t.Helper()
		checks = 0
		orig, inst = runOrig(export, params...), runInst(export, params...)
		if none != 0 {
			t.Fatalf("the original made %d checks", none)
		}
		return orig, inst, checks
	}
}

// globalModule exports a mutable i32 global "g" = 5, for imported globals.
var globalModule = wmod(
	sec(6, 1, []byte{0x7F, 0x01, 0x41, 0x05, 0x0B}),
	sec(7, 1, cat(wname("g"), []byte{0x03, 0x00})),
)

// checksFor is how many checks n iterations of loop bodies make.
func checksFor(n int) int {
	if n == 0 {
		return 0
	}
	return (n - 1) / loopCheckEvery
}

func TestInstrumentSimpleLoop(t *testing.T) {
	t.Parallel()
	wasm := wmod(testTypes,
		sec(2, 1, lengthImport),
		sec(3, 1, []byte{tI32I32}),
		sec(7, 1, cat(wname("run"), []byte{0x00, 0x01})),
		sec(10, 1, countLoop),
	)
	for _, n := range []int{0, 1, loopCheckEvery, loopCheckEvery + 1, 5*loopCheckEvery + 3} {
		orig, inst, checks := runBoth(t, wasm, "run", uint64(n))
		// The loop body runs n+1 times: the last iteration exits.
		if orig[0] != uint64(n) || inst[0] != uint64(n) || checks != checksFor(n+1) {
			t.Errorf("n=%d: orig %v inst %v checks %d, want %d", n, orig, inst, checks, checksFor(n+1))
		}
	}
}

// TestInstrumentCalls: the entry of every function that calls counts, so
// recursion without a loop reaches the check; leaf functions do not count;
// with loops off only entries count.
func TestInstrumentCalls(t *testing.T) {
	t.Parallel()
	// rec(n) = n == 0 ? 0 : rec(n-1) + 1, function 1: n+1 entries.
	rec := fbody([]byte{0}, 0x20, 0x00, 0x45, 0x04, 0x7F, 0x41, 0x00, 0x05,
		0x20, 0x00, 0x41, 0x01, 0x6B, 0x10, 0x01, 0x41, 0x01, 0x6A, 0x0B, 0x0B)
	// id(x) = x, function 2, a leaf.
	id := fbody([]byte{0}, 0x20, 0x00, 0x0B)
	// run(n): countLoop calling id(i) in each iteration, function 3: one
	// entry and n+1 loop bodies.
	run := fbody([]byte{1, 1, 0x7F},
		0x02, 0x40, 0x03, 0x40,
		0x20, 0x01, 0x20, 0x00, 0x4E, 0x0D, 0x01,
		0x20, 0x01, 0x10, 0x02, 0x41, 0x01, 0x6A, 0x21, 0x01,
		0x0C, 0x00, 0x0B, 0x0B,
		0x20, 0x01, 0x0B)
	// ind(n) = rec through call_indirect: table 0 holds rec.
	ind := fbody([]byte{0}, 0x20, 0x00, 0x41, 0x00, 0x11, tI32I32, 0x00, 0x0B)
	wasm := wmod(testTypes,
		sec(2, 1, lengthImport),
		sec(3, 4, []byte{tI32I32}, []byte{tI32I32}, []byte{tI32I32}, []byte{tI32I32}),
		sec(4, 1, []byte{0x70, 0x00, 0x01}),
		sec(7, 3, cat(wname("rec"), []byte{0x00, 0x01}), cat(wname("run"), []byte{0x00, 0x03}), cat(wname("ind"), []byte{0x00, 0x04})),
		sec(9, 1, []byte{0x00, 0x41, 0x00, 0x0B, 0x01, 0x01}),
		sec(10, 4, rec, id, run, ind),
	)
	for _, n := range []int{0, 1, loopCheckEvery, 3*loopCheckEvery + 5} {
		for _, loops := range []bool{true, false} {
			orig, inst, checks := runBothMode(t, wasm, loops, "rec", uint64(n))
			if orig[0] != uint64(n) || inst[0] != uint64(n) || checks != checksFor(n+1) {
				t.Errorf("rec(%d), loops %v: orig %v inst %v checks %d, want %d", n, loops, orig, inst, checks, checksFor(n+1))
			}
			orig, inst, checks = runBothMode(t, wasm, loops, "ind", uint64(n))
			if orig[0] != uint64(n) || inst[0] != uint64(n) || checks != checksFor(n+2) {
				t.Errorf("ind(%d), loops %v: orig %v inst %v checks %d, want %d", n, loops, orig, inst, checks, checksFor(n+2))
			}
			want := checksFor(n + 2) // run's entry and n+1 loop bodies; id is a leaf
			if !loops {
				want = 0 // one entry
			}
			orig, inst, checks = runBothMode(t, wasm, loops, "run", uint64(n))
			if orig[0] != uint64(n) || inst[0] != uint64(n) || checks != want {
				t.Errorf("run(%d), loops %v: orig %v inst %v checks %d, want %d", n, loops, orig, inst, checks, want)
			}
		}
	}
}

// TestInstrumentNested covers loops nested in blocks and ifs, br_table, a
// multi-value loop with parameters (block type by index), select with a
// type, 0xFC ops (memory.fill, memory.copy, trunc_sat), sign extension,
// imported and own globals and a missing global section created before
// the export section.
func TestInstrumentNested(t *testing.T) {
	t.Parallel()
	// run(n): sum over i < n of (inner loop of 3 iterations through a
	// br_table) using a (i32,i32)->(i32,i32) loop; global 1 (own) counts
	// outer iterations; memory ops on the side.
	code := []byte{
		// memory.fill(0, 0xAB, 16); memory.copy(16, 0, 16)
		0x41, 0x00, 0x41, 0xAB, 0x01, 0x41, 0x10, 0xFC, 0x0B, 0x00,
		0x41, 0x10, 0x41, 0x00, 0x41, 0x10, 0xFC, 0x0A, 0x00, 0x00,
		// i32.trunc_sat_f32_s(1.5e10) -> 0x7fffffff, i32.extend8_s, drop
		0x43, 0xF9, 0x02, 0x60, 0x50, 0xFC, 0x00, 0xC0, 0x1A,
		0x41, 0x00, // acc
		0x41, 0x00, // i
		0x03, tI32x2, // loop (param i32 i32) (result i32 i32)  [acc i]
		0x21, 0x01, // local1 = i
		0x21, 0x02, // local2 = acc
		0x20, 0x01, 0x20, 0x00, 0x48, // i < n
		0x04, 0x40, // if
		0x23, 0x01, 0x41, 0x01, 0x6A, 0x24, 0x01, // own global++
		0x41, 0x00, 0x21, 0x03, // j = 0
		0x02, 0x40, // block
		0x03, 0x40, // loop
		0x02, 0x40, 0x02, 0x40, 0x02, 0x40, // block block block
		0x20, 0x03, 0x0E, 0x02, 0x00, 0x01, 0x02, // br_table 0 1 default 2 on j
		0x0B, // end: j == 0: acc += 1
		0x20, 0x02, 0x41, 0x01, 0x6A, 0x21, 0x02,
		0x0B, // j == 1: acc += 10
		0x20, 0x02, 0x41, 0x0A, 0x6A, 0x21, 0x02,
		0x0B, // j >= 2: acc += 100, exit when j == 2
		0x20, 0x03, 0x41, 0x01, 0x6A, 0x21, 0x03,
		0x20, 0x03, 0x41, 0x03, 0x4E, 0x0D, 0x01, // j >= 3: br_if 1 (out of the block)
		0x20, 0x02, 0x41, 0xE4, 0x00, 0x6A, 0x21, 0x02,
		0x0C, 0x00, // br 0 (loop)
		0x0B, 0x0B, // end loop, end block
		0x20, 0x02, 0x20, 0x01, 0x41, 0x01, 0x6A, // [acc i+1]
		0x0C, 0x01, // br 1: the outer loop, with its params
		0x0B,                   // end if
		0x20, 0x02, 0x20, 0x01, // [acc i]
		0x0B, // end loop
		0x1A, // drop i
		// select (result i32): acc or 0 on 1
		0x41, 0x00, 0x41, 0x01, 0x1C, 0x01, 0x7F,
		// + imported global (5) + own global + memory[20] byte (0xAB)
		0x23, 0x00, 0x6A, 0x23, 0x01, 0x6A,
		0x41, 0x00, 0x2D, 0x00, 0x14, 0x6A,
		0x0B,
	}
	wasm := wmod(testTypes,
		sec(2, 2, lengthImport, cat(wname("g"), wname("g"), []byte{0x03, 0x7F, 0x01})),
		sec(3, 1, []byte{tI32I32}),
		sec(5, 1, []byte{0x00, 0x01}),
		sec(6, 1, []byte{0x7F, 0x01, 0x41, 0x00, 0x0B}),
		sec(7, 1, cat(wname("run"), []byte{0x00, 0x01})),
		sec(10, 1, fbody([]byte{1, 3, 0x7F}, code...)),
	)
	for _, n := range []int{0, 1, 2, 3000, 20000} {
		orig, inst, checks := runBoth(t, wasm, "run", uint64(n))
		want := uint64(n*(1+10+100+10+100)+5+n+0xAB) & 0xFFFFFFFF
		// Loop bodies run n+1 times outside, 3 times inside per outer
		// iteration; all loops share the counter.
		if orig[0] != want || inst[0] != want || checks != checksFor(n+1+3*n) {
			t.Errorf("n=%d: orig %d inst %d want %d; checks %d want %d", n, orig[0], inst[0], want, checks, checksFor(n+1+3*n))
		}
	}

	// Without a global section one is created between the memory and the
	// export sections.
	noGlobals := wmod(testTypes,
		sec(2, 1, lengthImport),
		sec(3, 1, []byte{tI32I32}),
		sec(5, 1, []byte{0x00, 0x01}),
		sec(7, 1, cat(wname("run"), []byte{0x00, 0x01})),
		sec(10, 1, countLoop),
		[]byte{0, 4, 'n', 'a', 'm', 'e'}, // a custom section
	)
	if orig, inst, checks := runBoth(t, noGlobals, "run", 40000); orig[0] != 40000 || inst[0] != 40000 || checks != checksFor(40001) {
		t.Errorf("no global section: %v %v %d", orig, inst, checks)
	}
	// Without exports and memory: appended at the end, before the code.
	onlyCode := wmod(testTypes, sec(2, 1, cat(wname(loopCheckModule), wname("length_unsafe"), []byte{0x00, tI64I64})),
		sec(3, 1, []byte{tI32I32}), sec(10, 1, countLoop))
	if _, err := Instrument(onlyCode, true); err != nil {
		t.Fatal(err)
	}
}

// TestInstrumentCheckImport: the check calls the length import however many
// other imports come first, and no index moves.
func TestInstrumentCheckImport(t *testing.T) {
	t.Parallel()
	wasm := wmod(testTypes,
		sec(2, 3,
			cat(wname(loopCheckModule), wname("alloc"), []byte{0x00, tI64I64}),
			cat(wname("other"), wname("length"), []byte{0x00, tI64I64}), // wrong module
			cat(wname(loopCheckModule), wname("length"), []byte{0x00, tI64I64})),
		sec(3, 2, []byte{tI32I32, tVoidI32}),
		sec(7, 2, cat(wname("run"), []byte{0x00, 0x03}), cat(wname("alloc"), []byte{0x00, 0x04})),
		sec(10, 2, countLoop, fbody([]byte{0}, 0x42, 0x00, 0x10, 0x00, 0xA7, 0x0B)), // alloc(0) -> 7
	)
	out, err := Instrument(wasm, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte{0x42, 0x7F, 0x10, 0x02, 0x1A}) {
		t.Errorf("the check does not call import 2")
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	var checks int
	checkHost(t, r, &checks)
	b := r.NewHostModuleBuilder("other")
	b.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, s []uint64) { t.Error("other.length called") }),
		[]api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI64}).Export("length")
	if _, err := b.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := r.Instantiate(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := m.ExportedFunction("alloc").Call(ctx); err != nil || res[0] != 7 {
		t.Errorf("alloc: %v %v", res, err)
	}
	if res, err := m.ExportedFunction("run").Call(ctx, 3*loopCheckEvery); err != nil || res[0] != 3*loopCheckEvery || checks != 3 {
		t.Errorf("run: %v %v, %d checks", res, err, checks)
	}
}

// bulkModule has one function per kind of bulk instruction, each of type
// (i32) -> i32 with its size n as the argument:
//
//	mem(n):   memory.fill(0, 0x5A, n); memory.copy(n, 0, n); load8_u(n)
//	init(n):  memory.init(0, 0, n) from a 3000-byte passive segment; load8_u(n>>1)
//	table(n): table.grow(null, n); table.fill(0, null, n); table.copy(1, 0, n);
//	          table.init(0, 0, 2) from a passive element segment; table.size + is_null(table[0])
//	loop(k):  k iterations (at least 1) of memory.fill(0, i, 4096); load8_u(0)
//
// Its memory has 600 pages (37.5 MiB) and its table 4 entries.
var bulkModule = func() []byte {
	seg := make([]byte, 3000)
	for i := range seg {
		seg[i] = byte(i*7 + 1)
	}
	return wmod(testTypes,
		sec(2, 1, lengthImport),
		sec(3, 4, []byte{tI32I32}, []byte{tI32I32}, []byte{tI32I32}, []byte{tI32I32}),
		sec(4, 1, []byte{0x70, 0x00, 0x04}),
		sec(5, 1, []byte{0x00, 0xD8, 0x04}),
		sec(7, 4, cat(wname("mem"), []byte{0x00, 0x01}), cat(wname("init"), []byte{0x00, 0x02}),
			cat(wname("table"), []byte{0x00, 0x03}), cat(wname("loop"), []byte{0x00, 0x04})),
		sec(9, 1, []byte{0x01, 0x00, 0x02, 0x01, 0x02}),
		[]byte{12, 0x01},
		sec(10, 4,
			fbody([]byte{0},
				0x41, 0x00, 0x41, 0xDA, 0x00, 0x20, 0x00, 0xFC, 0x0B, 0x00, // memory.fill
				0x20, 0x00, 0x41, 0x00, 0x20, 0x00, 0xFC, 0x0A, 0x00, 0x00, // memory.copy
				0x20, 0x00, 0x2D, 0x00, 0x00, 0x0B),
			fbody([]byte{0},
				0x41, 0x00, 0x41, 0x00, 0x20, 0x00, 0xFC, 0x08, 0x00, 0x00, // memory.init
				0x20, 0x00, 0x41, 0x01, 0x76, 0x2D, 0x00, 0x00, 0x0B),
			fbody([]byte{0},
				0xD0, 0x70, 0x20, 0x00, 0xFC, 0x0F, 0x00, 0x1A, // table.grow, drop
				0x41, 0x00, 0xD0, 0x70, 0x20, 0x00, 0xFC, 0x11, 0x00, // table.fill
				0x41, 0x01, 0x41, 0x00, 0x20, 0x00, 0xFC, 0x0E, 0x00, 0x00, // table.copy
				0x41, 0x00, 0x41, 0x00, 0x41, 0x02, 0xFC, 0x0C, 0x00, 0x00, // table.init
				0xFC, 0x10, 0x00, 0x41, 0x00, 0x25, 0x00, 0xD1, 0x6A, 0x0B),
			fbody([]byte{1, 1, 0x7F},
				0x03, 0x40,
				0x41, 0x00, 0x20, 0x01, 0x41, 0x80, 0x20, 0xFC, 0x0B, 0x00, // memory.fill(0, i, 4096)
				0x20, 0x01, 0x41, 0x01, 0x6A, 0x22, 0x01, 0x20, 0x00, 0x49, 0x0D, 0x00, // br_if ++i < k
				0x0B, 0x41, 0x00, 0x2D, 0x00, 0x00, 0x0B)),
		sec(11, 1, cat([]byte{0x01}, appendU32(nil, uint32(len(seg))), seg)),
	)
}()

// countModel is the instrumented counter: loop counts one, bulk counts
// cost, and either asks the host when the counter would go below zero.
type countModel struct{ n, checks int }

func newCountModel() *countModel { return &countModel{n: loopCheckEvery} }

func (m *countModel) loop() { m.bulk(1) }

func (m *countModel) bulk(cost int) {
	if m.n -= cost; m.n < 0 {
		m.checks++
		m.n = loopCheckEvery
	}
}

func memCost(n int) int   { return 1 + n>>bulkMemShift }
func tableCost(n int) int { return 1 + n>>bulkTableShift }

// TestInstrumentBulk: bulk instructions count by their size, in both
// modes, and the rewritten module computes the same results.
func TestInstrumentBulk(t *testing.T) {
	t.Parallel()
	type call struct {
		export string
		n      int
		want   uint64
		count  func(m *countModel, loops bool)
	}
	var calls []call
	for _, n := range []int{0, 1, 1023, 1024, 8<<20 - 2048, 8 << 20, 16<<20 - 1, 16 << 20, 16<<20 + 1} {
		want := uint64(0x5A)
		if n == 0 {
			want = 0
		}
		calls = append(calls, call{"mem", n, want, func(m *countModel, _ bool) { m.bulk(memCost(n)); m.bulk(memCost(n)) }})
	}
	for _, n := range []int{0, 1, 1024, 3000} {
		want := uint64(byte((n>>1)*7 + 1))
		if n == 0 {
			want = 0
		}
		calls = append(calls, call{"init", n, want, func(m *countModel, _ bool) { m.bulk(memCost(n)) }})
	}
	for _, n := range []int{0, 1, 127, 128, 1 << 20, 1<<21 - 1, 1 << 21} {
		calls = append(calls, call{"table", n, uint64(4 + n), func(m *countModel, _ bool) {
			for range 3 {
				m.bulk(tableCost(n))
			}
			m.bulk(tableCost(2))
		}})
	}
	for _, k := range []int{0, 1, 3000, 10000} {
		calls = append(calls, call{"loop", k, uint64(byte(max(k, 1) - 1)), func(m *countModel, loops bool) {
			for range max(k, 1) {
				if loops {
					m.loop()
				}
				m.bulk(memCost(4096))
			}
		}})
	}
	for _, loops := range []bool{true, false} {
		run := compileBoth(t, bulkModule, loops)
		for _, c := range calls {
			m := newCountModel()
			c.count(m, loops)
			orig, inst, checks := run(c.export, uint64(c.n))
			if orig[0] != c.want || inst[0] != c.want || checks != m.checks {
				t.Errorf("%s(%d), loops %v: orig %d inst %d want %d; checks %d want %d",
					c.export, c.n, loops, orig[0], inst[0], c.want, checks, m.checks)
			}
		}
	}
	if m := newCountModel(); memCost(16<<20) <= m.n || memCost(16<<20-1) > m.n {
		t.Errorf("16 MiB of bulk work does not take one check")
	}
}

// TestInstrumentBulkChecksFirst: when a bulk instruction uses up the
// counter, the host is asked before the instruction runs, so a call past
// its deadline does not start it.
func TestInstrumentBulkChecksFirst(t *testing.T) {
	t.Parallel()
	out, err := Instrument(bulkModule, true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 17 << 20
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(false))
	defer r.Close(ctx)
	var seen []byte // the byte at n when each check ran
	_, err = r.NewHostModuleBuilder(loopCheckModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, s []uint64) {
			b, _ := mod.Memory().ReadByte(n)
			seen = append(seen, b)
		}), []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI64}).Export("length").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Instantiate(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	// mem(n): the fill asks first, then the copy that writes memory[n].
	res, err := m.ExportedFunction("mem").Call(ctx, n)
	if err != nil || res[0] != 0x5A || !bytes.Equal(seen, []byte{0, 0}) {
		t.Errorf("mem(%d): %v %v, bytes at the checks %v, want [0 0]", n, res, err, seen)
	}
}

func TestInstrumentRefuses(t *testing.T) {
	t.Parallel()
	withCode := func(imports []byte, code ...byte) []byte {
		return wmod(testTypes, imports, sec(3, 1, []byte{tVoidI32}), sec(10, 1, fbody([]byte{0}, code...)))
	}
	imp := sec(2, 1, lengthImport)
	loopI32 := []byte{0x03, 0x40, 0x0B, 0x41, 0x00, 0x0B}
	for name, wasm := range map[string][]byte{
		"no import":          withCode(sec(2, 0), loopI32...),
		"no import section":  wmod(testTypes, sec(3, 1, []byte{tVoidI32}), sec(10, 1, fbody([]byte{0}, loopI32...))),
		"wrong signature":    withCode(sec(2, 1, cat(wname(loopCheckModule), wname("length"), []byte{0x00, tI32I32})), loopI32...),
		"wrong name":         withCode(sec(2, 1, cat(wname(loopCheckModule), wname("alloc"), []byte{0x00, tI64I64})), loopI32...),
		"simd":               withCode(imp, 0xFD, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1A, 0x41, 0x00, 0x0B),
		"atomics":            withCode(imp, 0x41, 0x00, 0xFE, 0x10, 0x02, 0x00, 0x0B),
		"tail call":          withCode(imp, 0x12, 0x00, 0x0B),
		"try_table":          withCode(imp, 0x1F, 0x40, 0x00, 0x0B, 0x41, 0x00, 0x0B),
		"unknown 0xFC":       withCode(imp, 0xFC, 0x12, 0x0B),
		"overlong 0xFC":      withCode(imp, 0xFC, 0x8B, 0x00, 0x00, 0x0B),
		"multi-memory":       withCode(imp, 0x41, 0x00, 0x28, 0x42, 0x01, 0x00, 0x0B),
		"memory.size index":  withCode(imp, 0x3F, 0x01, 0x0B),
		"negative blocktype": withCode(imp, 0x02, 0x50, 0x0B, 0x41, 0x00, 0x0B),
		"blocktype range":    withCode(imp, 0x02, 0x09, 0x0B, 0x41, 0x00, 0x0B),
		"unbalanced":         withCode(imp, 0x03, 0x40, 0x41, 0x00, 0x0B),
		"bytes after end":    withCode(imp, 0x41, 0x00, 0x0B, 0x01),
		"else outside if":    withCode(imp, 0x05, 0x41, 0x00, 0x0B),
		"overlong LEB":       withCode(imp, 0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0B),
		"LEB unused bits":    withCode(imp, 0x41, 0x80, 0x80, 0x80, 0x80, 0x10, 0x0B),
		"truncated":          withCode(imp, 0x41)[:40],
		"bad magic":          []byte("\x00asm\x02\x00\x00\x00"),
		"tag section":        wmod(testTypes, imp, sec(13, 0)),
		"unknown section":    wmod(testTypes, imp, sec(14, 0)),
		"out of order":       wmod(imp, testTypes),
		"duplicate section":  wmod(testTypes, imp, sec(3, 0), sec(3, 0)),
		"trailing in types":  wmod(append(testTypes, 0), imp),
		"gc type":            wmod(sec(1, 1, []byte{0x5F, 0x00}), imp),
		"ref type":           withCode(imp, 0xD0, 0x63, 0x0B),
		"memory64":           wmod(testTypes, imp, sec(5, 1, []byte{0x04, 0x01})),
		"tag import":         wmod(testTypes, sec(2, 1, cat(wname("a"), wname("b"), []byte{0x04, 0x00, 0x00}))),
		"section past end":   append(wmod(testTypes), 0x01, 0x10, 0x00),
		// Invalid as written, valid once the counter is appended.
		"counter global.set": withCode(imp, 0x41, 0x00, 0x24, 0x00, 0x41, 0x00, 0x0B),
		"scratch global.get": withCode(imp, 0x23, 0x01, 0x0B),
		"scratch export": wmod(testTypes, imp, sec(3, 1, []byte{tVoidI32}), sec(7, 1, cat(wname("s"), []byte{0x03, 0x01})),
			sec(10, 1, fbody([]byte{0}, loopI32...))),
		"counter export": wmod(testTypes, imp, sec(3, 1, []byte{tVoidI32}), sec(7, 1, cat(wname("n"), []byte{0x03, 0x00})),
			sec(10, 1, fbody([]byte{0}, loopI32...))),
	} {
		if out, err := Instrument(wasm, true); !errors.Is(err, errNotInstrumentable) {
			t.Errorf("%s: %v, %x", name, err, out)
		}
	}
}

// TestLEB checks the decoder against the encoders and the spec's limits.
func TestLEB(t *testing.T) {
	t.Parallel()
	for _, v := range []int32{0, 1, -1, 63, 64, -64, -65, 1 << 20, -1 << 31, 1<<31 - 1} {
		r := &wreader{b: appendS32(nil, v)}
		got, err := r.leb(32, true)
		if err != nil || int32(got) != v || !r.eof() {
			t.Errorf("s32 %d: %d %v", v, int32(got), err)
		}
	}
	for _, v := range []uint32{0, 1, 127, 128, 1<<32 - 1} {
		r := &wreader{b: appendU32(nil, v)}
		got, err := r.u32()
		if err != nil || got != v || !r.eof() {
			t.Errorf("u32 %d: %d %v", v, got, err)
		}
	}
	for _, c := range []struct {
		b      []byte
		bits   uint
		signed bool
		ok     bool
	}{
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0x0F}, 32, false, true},
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0x1F}, 32, false, false},
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, 32, true, true},  // -1
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x78}, 32, true, true},  // min int32
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x70}, 32, true, false}, // sign bit not extended
		{[]byte{0xC0, 0x7F}, 33, true, true},                    // -64, an overlong 0x40
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0x0F}, 33, true, true},
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0x1F}, 33, true, false},
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, 64, true, true},
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, 64, true, false},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 64, true, false},
	} {
		r := &wreader{b: c.b}
		_, err := r.leb(c.bits, c.signed)
		if (err == nil) != c.ok || (err == nil && !r.eof()) {
			t.Errorf("%x (%d bits, signed %v): %v", c.b, c.bits, c.signed, err)
		}
	}
}

// FuzzInstrument: no input crashes the rewriter, and wazero accepts a
// rewritten module exactly when it accepts the original: a rewrite never
// makes an invalid module valid (one naming the counter, say).
func FuzzInstrument(f *testing.F) {
	f.Add(wmod(testTypes, sec(2, 1, lengthImport), sec(3, 1, []byte{tI32I32}),
		sec(7, 1, cat(wname("run"), []byte{0x00, 0x01})), sec(10, 1, countLoop)))
	f.Add(wmod(testTypes, sec(2, 1, lengthImport), sec(3, 1, []byte{tVoidI32}),
		sec(6, 1, []byte{0x7F, 0x01, 0x41, 0x00, 0x0B}),
		sec(10, 1, fbody([]byte{1, 2, 0x7F}, 0x02, 0x40, 0x03, 0x40, 0x20, 0x00, 0x0E, 0x01, 0x00, 0x01, 0x0B, 0x0B,
			0xFC, 0x01, 0x1A, 0x41, 0x00, 0x0B))))
	f.Add(wmod(testTypes, sec(2, 1, lengthImport), sec(3, 1, []byte{tI32x2}),
		sec(10, 1, fbody([]byte{0}, 0x20, 0x00, 0x20, 0x01, 0x03, tI32x2, 0x0B, 0x0B))))
	// Calls, recursion and call_indirect: function entries count.
	f.Add(wmod(testTypes, sec(2, 1, lengthImport), sec(3, 2, []byte{tI32I32}, []byte{tI32I32}),
		sec(4, 1, []byte{0x70, 0x00, 0x01}), sec(9, 1, []byte{0x00, 0x41, 0x00, 0x0B, 0x01, 0x01}),
		sec(10, 2,
			fbody([]byte{0}, 0x20, 0x00, 0x45, 0x04, 0x7F, 0x41, 0x00, 0x05,
				0x20, 0x00, 0x41, 0x01, 0x6B, 0x10, 0x01, 0x41, 0x01, 0x6A, 0x0B, 0x0B),
			fbody([]byte{0}, 0x20, 0x00, 0x41, 0x00, 0x11, tI32I32, 0x00, 0x0B))))
	// Every bulk instruction, memory and table.
	f.Add(bulkModule)
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(false))
	defer r.Close(ctx)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Instrument(wasm, true)
		if err != nil {
			if !errors.Is(err, errNotInstrumentable) {
				t.Fatalf("untyped error %v", err)
			}
			if entries, err2 := Instrument(wasm, false); err2 == nil {
				t.Fatalf("entries only accepts what loops refuse (%v): %x", err, entries)
			}
			return
		}
		compiles := func(wasm []byte) error {
			cm, err := r.CompileModule(ctx, wasm)
			if err == nil {
				cm.Close(ctx)
			}
			return err
		}
		origErr := compiles(wasm)
		entries, err := Instrument(wasm, false)
		if err != nil {
			t.Fatalf("entries only refuses what loops accept: %v", err)
		}
		for _, rw := range []struct {
			name string
			wasm []byte
		}{{"rewrite", out}, {"entries-only rewrite", entries}} {
			err := compiles(rw.wasm)
			if err != nil && origErr == nil {
				t.Fatalf("the original compiles, the %s does not: %v", rw.name, err)
			}
			if err == nil && origErr != nil {
				t.Fatalf("the %s of an invalid module compiles: %v", rw.name, origErr)
			}
		}
	})
}
