package wasmrewrite

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/mcphost-project/mcphost/filters"
)

// The built-in module, coalesced, instantiates to the same memory as the
// original, with a few hundred segments instead of 56190.
func TestCoalesceDataBuiltin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	orig := filters.Module()
	merged := CoalesceData(orig)
	before, _ := readDataSegments(dataSection(t, orig))
	after, ok := readDataSegments(dataSection(t, merged))
	if !ok || len(after) >= len(before)/100 {
		t.Fatalf("%d segments coalesced into %d", len(before), len(after))
	}
	t.Logf("%d segments, %d bytes -> %d segments, %d bytes", len(before), len(orig), len(after), len(merged))

	// The interpreter: memory is the same under either engine, and it
	// does not compile 5 MB of code twice.
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	stubImports(t, r, orig)
	memory := func(wasm []byte) []byte {
		t.Helper()
		mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions().WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		defer mod.Close(ctx)
		b, ok := mod.Memory().Read(0, mod.Memory().Size())
		if !ok {
			t.Fatal("memory not readable")
		}
		return bytes.Clone(b)
	}
	if a, b := memory(orig), memory(merged); !bytes.Equal(a, b) {
		t.Fatalf("initial memories differ (%d and %d bytes)", len(a), len(b))
	}
}

// stubImports defines, in r, every function wasm imports from a module
// other than WASI, answering zeros: enough to instantiate it and read its
// initial memory, without the plugins runtime's host.
func stubImports(t *testing.T, r wazero.Runtime, wasm []byte) {
	t.Helper()
	ctx := context.Background()
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	builders := map[string]wazero.HostModuleBuilder{}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod == wasi_snapshot_preview1.ModuleName {
			continue
		}
		if builders[mod] == nil {
			builders[mod] = r.NewHostModuleBuilder(mod)
		}
		results := len(f.ResultTypes())
		builders[mod].NewFunctionBuilder().WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) {
			for i := range results {
				stack[i] = 0
			}
		}), f.ParamTypes(), f.ResultTypes()).Export(name)
	}
	for mod, b := range builders {
		if _, err := b.Instantiate(ctx); err != nil {
			t.Fatalf("stubbing %s: %v", mod, err)
		}
	}
}

// dataSection returns the body of wasm's data section.
func dataSection(t testing.TB, wasm []byte) []byte {
	t.Helper()
	r := &wreader{b: wasm, pos: 8}
	for !r.eof() {
		id, _ := r.byte()
		size, _ := r.u32()
		body, err := r.bytes(uint64(size))
		if err != nil {
			t.Fatal(err)
		}
		if id == 11 {
			return body
		}
	}
	t.Fatal("no data section")
	return nil
}

// memoryImage applies wasm's data segments in order to a zeroed memory of
// size bytes, as instantiation does; ok is false when a segment does not
// fit or the module has no data section this package reads.
func memoryImage(wasm []byte, size int) (img []byte, ok bool) {
	r := &wreader{b: wasm, pos: 8}
	for !r.eof() {
		id, err := r.byte()
		if err != nil {
			return nil, false
		}
		n, err := r.u32()
		if err != nil {
			return nil, false
		}
		body, err := r.bytes(uint64(n))
		if err != nil {
			return nil, false
		}
		if id != 11 {
			continue
		}
		s := &wreader{b: body}
		count, err := s.u32()
		if err != nil {
			return nil, false
		}
		img = make([]byte, size)
		for range count {
			if f, err := s.u32(); err != nil || f != 0 {
				return nil, false
			}
			if op, err := s.byte(); err != nil || op != 0x41 {
				return nil, false
			}
			off, err := s.leb(32, true)
			if err != nil {
				return nil, false
			}
			if op, err := s.byte(); err != nil || op != 0x0B {
				return nil, false
			}
			l, err := s.u32()
			if err != nil {
				return nil, false
			}
			data, err := s.bytes(uint64(l))
			if err != nil || uint64(uint32(off))+uint64(l) > uint64(size) {
				return nil, false
			}
			copy(img[uint32(off):], data)
		}
		return img, s.eof()
	}
	return nil, false
}

// dataModule is a module of one memory and the given segments.
func dataModule(segs ...dataSegment) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, 5, 3, 1, 0, 1) // memory section: one memory, min 1 page
	body := appendU32(nil, uint32(len(segs)))
	for _, s := range segs {
		body = append(body, 0x00, 0x41)
		body = appendS32(body, int32(s.offset))
		body = append(body, 0x0B)
		body = appendU32(body, uint32(len(s.data)))
		body = append(body, s.data...)
	}
	out = append(out, 11)
	out = appendU32(out, uint32(len(body)))
	return append(out, body...)
}

// Whatever the input, coalesceData returns it unchanged or a module whose
// segments build the same memory, fewer of them.
func FuzzCoalesceData(f *testing.F) {
	f.Add(dataModule(dataSegment{10, []byte("ab")}, dataSegment{20, []byte("cd")}, dataSegment{200, []byte("e")}))
	f.Add(dataModule(dataSegment{300, []byte("late")}, dataSegment{0, []byte("early")}, dataSegment{5, []byte("x")}))
	f.Add(dataModule(dataSegment{0, []byte("overlap")}, dataSegment{3, []byte("!")}))
	f.Add(dataModule(dataSegment{65530, []byte("edge of the page")}))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out := CoalesceData(wasm)
		if bytes.Equal(out, wasm) {
			return
		}
		const size = 1 << 17
		want, ok1 := memoryImage(wasm, size)
		got, ok2 := memoryImage(out, size)
		if ok1 != ok2 || !bytes.Equal(got, want) {
			t.Fatalf("coalescing changed the initial memory (ok %v -> %v)", ok1, ok2)
		}
		in, _ := readDataSegments(dataSection(t, wasm))
		merged, _ := readDataSegments(dataSection(t, out))
		if len(merged) >= len(in) {
			t.Fatalf("rewrote %d segments as %d", len(in), len(merged))
		}
	})
}
