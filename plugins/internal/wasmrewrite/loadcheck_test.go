package wasmrewrite

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/mcphost-project/mcphost/plugins/internal/wasmrewrite/wasmtest"
)

// TestCheckModuleRefusesBombs: each bomb is refused in well under a
// millisecond, with an error naming the section. Not parallel, unlike the
// other tests: it times the check.
func TestCheckModuleRefusesBombs(t *testing.T) {
	for _, b := range wasmtest.CompileBombs {
		t.Run(b.Name, func(t *testing.T) {
			start := time.Now()
			_, err := Check([]byte(b.Wasm))
			d := time.Since(start)
			if !errors.Is(err, errModuleLimit) || !strings.Contains(err.Error(), b.Msg) {
				t.Fatalf("%v, want %q", err, b.Msg)
			}
			if d > 10*time.Millisecond {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestCheckModuleCapsTables: tables keep their initial size, and their
// maximum becomes at most maxTableEntries; the rest is unchanged.
func TestCheckModuleCapsTables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ limits, want []byte }{
		{[]byte{0, 5}, []byte{1, 5, 0x80, 0x80, 0x40}},
		{[]byte{1, 3, 10}, []byte{1, 3, 10}},
		{cat([]byte{1, 3}, appendU32(nil, 1<<30)), cat([]byte{1, 3}, appendU32(nil, maxTableEntries))},
	} {
		in := wmod(sec(4, 2, cat([]byte{0x70}, tc.limits), cat([]byte{0x6F}, tc.limits)), sec(5, 1, []byte{0, 1}))
		want := wmod(sec(4, 2, cat([]byte{0x70}, tc.want), cat([]byte{0x6F}, tc.want)), sec(5, 1, []byte{0, 1}))
		out, err := Check(in)
		if err != nil || string(out) != string(want) {
			t.Errorf("%x: %x, %v; want %x", in, out, err, want)
		}
	}
}

// FuzzCheckModule: no input panics the check, and it never refuses a
// small module that wazero compiles; what it returns wazero compiles too.
func FuzzCheckModule(f *testing.F) {
	for _, b := range wasmtest.CompileBombs {
		f.Add([]byte(b.Wasm))
	}
	for _, name := range []string{"recurse", "recurse-nolength", "bulk", "tablegrow"} {
		if b, err := os.ReadFile("../../testdata/recurse/" + name + ".wasm"); err == nil {
			f.Add(b)
		}
	}
	f.Add(bulkModule)
	f.Add(wmod(testTypes, sec(2, 1, lengthImport), sec(3, 1, []byte{tI32I32}),
		sec(7, 1, cat(wname("run"), []byte{0x00, 0x01})), sec(10, 1, countLoop)))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Check(wasm)
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
	t.Parallel()
	wasm, err := os.ReadFile("../../../filters/builtin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := Check(wasm)
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
	if again, err := Check(out); err != nil || !bytes.Equal(again, out) {
		t.Fatalf("checking the capped module: %v, changed %v", err, !bytes.Equal(again, out))
	}
}
