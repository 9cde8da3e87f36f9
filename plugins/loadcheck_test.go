package plugins

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/mcphost-project/mcphost/abi"
)

// compileBombs are modules of a few dozen bytes that made wazero allocate
// for a declared count before reading it: 288 GiB for 2^32-1 code bodies
// (a fatal out of memory), 11.6 s and 1.6 GB to compile 2^26 locals.
var compileBombs = []struct {
	name, wasm, msg string
}{
	{"code bodies", string(wmod(sec(1, 1, []byte{0x60, 0, 0}), sec(3, 1, []byte{0}),
		cat([]byte{10}, appendU32(nil, 0xFFFFFFFF), []byte{2, 0, 0x0B}))),
		"code section: 4294967295 function bodies declared in 3 bytes"},
	{"functions", string(wmod(sec(1, 1, []byte{0x60, 0, 0}), cat([]byte{3}, appendU32(nil, 0xFFFFFFF), []byte{0, 0, 0}),
		sec(10, 1, fbody([]byte{0}, 0x0B)))),
		"function section: 268435455 functions declared in 3 bytes"},
	{"locals", string(wmod(sec(1, 1, []byte{0x60, 0, 0}), sec(3, 1, []byte{0}),
		sec(10, 1, fbody(cat([]byte{1}, appendU32(nil, 1<<26), []byte{0x7F}), 0x0B)))),
		"code section: function body 0 declares more than 50000 locals"},
	{"function and code disagree", string(wmod(sec(1, 1, []byte{0x60, 0, 0}), sec(3, 2, []byte{0}, []byte{0}),
		sec(10, 1, fbody([]byte{0}, 0x0B)))),
		"function section declares 2 functions, code section 1 bodies"},
	{"element indices", string(wmod(sec(1, 1, []byte{0x60, 0, 0}), sec(4, 1, []byte{0x70, 0, 1}),
		cat([]byte{9}, []byte{1, 0, 0x41, 0, 0x0B}, appendU32(nil, 0xFFFFFFFF)))),
		"element section: 4294967295 element indices declared in 0 bytes"},
	{"data length", string(wmod(sec(5, 1, []byte{0, 1}),
		cat([]byte{11}, []byte{1, 0, 0x41, 0, 0x0B}, appendU32(nil, 0xFFFFFFFF)))),
		"data section: 4294967295 bytes declared, 0 left"},
	{"section past the end", "\x00asm\x01\x00\x00\x00\x01\xFF\xFF\xFF\xFF\x0F", "type section: size 4294967295, 0 bytes left in the file"},
	{"table import", string(wmod(sec(2, 1, cat(wname("env"), wname("t"), []byte{1, 0x70, 0, 1})))),
		"import section: import 0 is a table; the host provides none"},
	{"table too large", string(wmod(sec(4, 1, cat([]byte{0x70, 0}, appendU32(nil, 100_000_000))))),
		"table section: table 0 starts with 100000000 entries; the limit is 1048576"},
}

// TestCheckModuleRefusesBombs: each bomb is refused in well under a
// millisecond, with an error naming the section.
func TestCheckModuleRefusesBombs(t *testing.T) {
	for _, b := range compileBombs {
		t.Run(b.name, func(t *testing.T) {
			start := time.Now()
			_, err := checkModule([]byte(b.wasm))
			d := time.Since(start)
			if !errors.Is(err, errModuleLimit) || !strings.Contains(err.Error(), b.msg) {
				t.Fatalf("%v, want %q", err, b.msg)
			}
			if d > 10*time.Millisecond {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestLoadRefusesBombs: through Load, each bomb fails with ErrCompile and
// the section's name, fast; before the check, "code bodies" killed the
// test binary and "locals" compiled for seconds.
func TestLoadRefusesBombs(t *testing.T) {
	rt := newRuntime(t, RuntimeOptions{})
	dir := t.TempDir()
	for i, b := range compileBombs {
		t.Run(b.name, func(t *testing.T) {
			path := filepath.Join(dir, "bomb"+itoa(i)+".wasm")
			if err := os.WriteFile(path, []byte(b.wasm), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			p, err := rt.Load(context.Background(), Spec{Name: "bomb", Source: path})
			if err == nil {
				p.Close(context.Background())
				t.Fatal("loaded")
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("refused after %v", d)
			}
			if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), b.msg) || !strings.Contains(err.Error(), path) {
				t.Fatalf("%v, want ErrCompile naming %s and %q", err, path, b.msg)
			}
		})
	}
}

// TestTableHugeRefused: a guest declaring a table of 10^8 entries (800 MB
// at instantiation, loaded before the cap) is refused when loaded.
func TestTableHugeRefused(t *testing.T) {
	rt := newRuntime(t, RuntimeOptions{})
	_, err := rt.Load(context.Background(), recurseGuest("huge", "tablehuge.wasm"))
	if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), "table 0 starts with 100000000 entries; the limit is 1048576") {
		t.Fatalf("%v, want a refusal of the table", err)
	}
}

// TestTableGrowCapped: a guest growing its table by 2^22 entries eight
// times (256 MiB of references, before the cap) sees every grow fail, and
// the host's heap does not grow, whichever way guests are stopped.
func TestTableGrowCapped(t *testing.T) {
	for _, opts := range []RuntimeOptions{{}, {CloseOnContextDone: true}} {
		rt := newRuntime(t, opts)
		p := load(t, rt, recurseGuest("grow", "tablegrow.wasm"))
		in, _ := json.Marshal(abi.ToolCallInput{Server: "a", Tool: "t", Arguments: json.RawMessage(`{}`)})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := callBounded(t, p, in, 10*time.Second)
		runtime.GC()
		runtime.ReadMemStats(&after) // the instance, and its table, are kept
		grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("heap grew by %d KiB", grown>>10)
		if err != nil {
			t.Fatalf("a table.grow past the cap succeeded: %v", err)
		}
		if grown > 32<<20 {
			t.Errorf("heap grew by %d MiB", grown>>20)
		}
	}
}

// TestCheckModuleCapsTables: tables keep their initial size, and their
// maximum becomes at most maxTableEntries; the rest is unchanged.
func TestCheckModuleCapsTables(t *testing.T) {
	for _, tc := range []struct{ limits, want []byte }{
		{[]byte{0, 5}, []byte{1, 5, 0x80, 0x80, 0x40}},
		{[]byte{1, 3, 10}, []byte{1, 3, 10}},
		{cat([]byte{1, 3}, appendU32(nil, 1<<30)), cat([]byte{1, 3}, appendU32(nil, maxTableEntries))},
	} {
		in := wmod(sec(4, 2, cat([]byte{0x70}, tc.limits), cat([]byte{0x6F}, tc.limits)), sec(5, 1, []byte{0, 1}))
		want := wmod(sec(4, 2, cat([]byte{0x70}, tc.want), cat([]byte{0x6F}, tc.want)), sec(5, 1, []byte{0, 1}))
		out, err := checkModule(in)
		if err != nil || string(out) != string(want) {
			t.Errorf("%x: %x, %v; want %x", in, out, err, want)
		}
	}
}

// FuzzCheckModule: no input panics the check, and it never refuses a
// small module that wazero compiles; what it returns wazero compiles too.
func FuzzCheckModule(f *testing.F) {
	for _, b := range compileBombs {
		f.Add([]byte(b.wasm))
	}
	for _, name := range []string{"recurse", "recurse-nolength", "bulk", "tablegrow"} {
		if b, err := os.ReadFile("testdata/recurse/" + name + ".wasm"); err == nil {
			f.Add(b)
		}
	}
	f.Add(bulkModule)
	f.Add(wmod(testTypes, sec(2, 1, lengthImport), sec(3, 1, []byte{tI32I32}),
		sec(7, 1, cat(wname("run"), []byte{0x00, 0x01})), sec(10, 1, countLoop)))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := checkModule(wasm)
		if len(wasm) > 4096 {
			return // compile only small modules; the check ran
		}
		ctx := context.Background()
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer r.Close(ctx)
		if err != nil {
			if !errors.Is(err, errModuleLimit) {
				t.Fatalf("untyped error %v", err)
			}
			// A count past the end is what made wazero allocate for it (a
			// fatal out of memory for some): not compiled here. Limits of
			// mcphost's own refuse valid modules by design.
			var pe pastEnd
			var ol overLimit
			if errors.As(err, &pe) || errors.As(err, &ol) {
				return
			}
			if _, cerr := r.CompileModule(ctx, wasm); cerr == nil {
				t.Fatalf("refused a module wazero compiles: %v", err)
			}
			return
		}
		if _, cerr := r.CompileModule(ctx, wasm); cerr == nil {
			if _, cerr := r.CompileModule(ctx, out); cerr != nil {
				t.Fatalf("capped module does not compile: %v", cerr)
			}
		}
	})
}

// TestCheckModuleAcceptsBuiltin: the built-in module (Go wasip1, 5.6 MB)
// passes, its table of a few thousand entries capped, in a few
// milliseconds.
func TestCheckModuleAcceptsBuiltin(t *testing.T) {
	wasm, err := os.ReadFile("../filters/builtin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := checkModule(wasm)
	t.Logf("checked %d bytes in %v", len(wasm), time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	// The table type: funcref (0x70), limits with a maximum (1), its size,
	// then the cap as its maximum.
	capped := false
	for i := bytes.Index(out, []byte{0x70, 1}); i >= 0 && !capped; {
		size, n := binary.Uvarint(out[i+2:])
		if n > 0 && size > 1000 && bytes.HasPrefix(out[i+2+n:], appendU32(nil, maxTableEntries)) {
			t.Logf("table of %d entries capped", size)
			capped = true
		}
		next := bytes.Index(out[i+1:], []byte{0x70, 1})
		if next < 0 {
			break
		}
		i += 1 + next
	}
	if !capped {
		t.Fatal("table not capped")
	}
	if again, err := checkModule(out); err != nil || !bytes.Equal(again, out) {
		t.Fatalf("checking the capped module: %v, changed %v", err, !bytes.Equal(again, out))
	}
}
