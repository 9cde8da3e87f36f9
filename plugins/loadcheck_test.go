package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/plugins/internal/wasmrewrite/wasmtest"
)

// TestLoadRefusesBombs: through Load, each bomb fails with ErrCompile and
// the section's name, fast; before the check, "code bodies" killed the
// test binary and "locals" compiled for seconds.
func TestLoadRefusesBombs(t *testing.T) {
	rt := newRuntime(t, RuntimeOptions{})
	dir := t.TempDir()
	for i, b := range wasmtest.CompileBombs {
		t.Run(b.Name, func(t *testing.T) {
			path := filepath.Join(dir, "bomb"+itoa(i)+".wasm")
			if err := os.WriteFile(path, []byte(b.Wasm), 0o644); err != nil {
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
			if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), b.Msg) || !strings.Contains(err.Error(), path) {
				t.Fatalf("%v, want ErrCompile naming %s and %q", err, path, b.Msg)
			}
		})
	}
}

// TestTableHugeRefused: a guest declaring a table of 10^8 entries (800 MB
// at instantiation, loaded before the cap) is refused when loaded.
func TestTableHugeRefused(t *testing.T) {
	t.Parallel()
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
