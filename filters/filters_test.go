package filters_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi/policytest"
	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/plugins"
	"github.com/mcphost-project/mcphost/plugins/compat"
)

// rt is one runtime for the whole test binary, so the embedded module is
// compiled once (and, with the on-disk cache, once across runs). It is safe
// for concurrent use and tests call t.Parallel, but for TestSharedModule,
// which counts rt's compiled modules.
var rt *plugins.Runtime

func TestMain(m *testing.M) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	rt, err = plugins.NewRuntime(context.Background(), plugins.RuntimeOptions{
		CacheDir: filepath.Join(base, "mcphost-test", "wazero"),
		Builtin:  filters.Builtin,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	rt.Close(context.Background())
	os.Exit(code)
}

// spec is a plugin spec for a built-in with a generous timeout: tests run
// beside other work on a small machine.
func spec(name string, config map[string]string) plugins.Spec {
	return plugins.Spec{Name: name, Source: "builtin:" + name, Config: config, Timeout: 5 * time.Second, Instances: 1}
}

func TestBuiltin(t *testing.T) {
	t.Parallel()
	want := []string{"allow", "arguments", "compact", "deny", "describe", "json_results", "mentions", "modes", "pin", "redact", "titles", "truncate"}
	if got := filters.Names(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		wasm, cfg, ok := filters.Builtin(name)
		if !ok || !bytes.Equal(wasm, filters.Module()) || cfg["mcphost.builtin"] != name {
			t.Errorf("Builtin(%q) = %d bytes, %v, %v", name, len(wasm), cfg, ok)
		}
	}
	if _, _, ok := filters.Builtin("nope"); ok {
		t.Error(`Builtin("nope") is ok`)
	}
}

// TestGolden runs every golden case of testdata (the ones package policies
// runs natively) through the real runtime and the embedded module.
func TestGolden(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		files, _ := filepath.Glob(filepath.Join(dir, "*.txtar"))
		if len(files) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, file := range files {
				t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
					t.Parallel()
					runGolden(t, name, file)
				})
			}
		})
	}
}

func runGolden(t *testing.T, name, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := policytest.ParseCase(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if err := compat.RunCase(context.Background(), rt, spec(name, nil), c); err != nil {
		t.Fatal(err)
	}
}

// TestCompatProbe holds every built-in to what the ABI asks of any plugin
// (plugins/compat): valid answers to minimal inputs and to inputs full of
// fields a later ABI may add, and the promises of its hints.
func TestCompatProbe(t *testing.T) {
	t.Parallel()
	configs := map[string]map[string]string{
		"allow": {"tools": `["a__*"]`, "resources": `["x://*"]`}, "deny": {"tools": `["*__write"]`, "methods": `["sampling/*"]`},
		"arguments": {"defaults": `{"a__*":{"limit":5}}`}, "pin": {"file": filepath.Join(t.TempDir(), "pins.json")},
	}
	for _, name := range filters.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := spec(name, configs[name])
			if name == "pin" {
				s.AllowedPaths = map[string]string{filepath.Dir(configs["pin"]["file"]): filepath.Dir(configs["pin"]["file"])}
			}
			for _, r := range compat.Probe(context.Background(), rt, s) {
				if r.Err != nil {
					t.Errorf("%s: %v", r.Name, r.Err)
				}
			}
		})
	}
}

// TestUnknownSelector checks that the module refuses to load without a
// known policy name, with a message saying why.
func TestUnknownSelector(t *testing.T) {
	t.Parallel()
	_, err := rt.Load(context.Background(), spec("titles", map[string]string{"mcphost.builtin": "nope"}))
	if err == nil || !strings.Contains(err.Error(), `no built-in policy "nope"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestSharedModule checks that every built-in shares one compiled module.
func TestSharedModule(t *testing.T) {
	ctx := context.Background()
	before := rt.Modules()
	var loaded []*plugins.Plugin
	for _, name := range []string{"titles", "json_results", "truncate", "redact"} {
		p, err := rt.Load(ctx, spec(name, nil))
		if err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, p)
	}
	defer func() {
		for _, p := range loaded {
			p.Close(ctx)
		}
	}()
	if got := rt.Modules(); got > before+1 || got < 1 {
		t.Fatalf("%d compiled modules (before: %d), want the one shared module", got, before)
	}
	sum := sha256.Sum256(filters.Module())
	for _, p := range loaded {
		if p.SHA256() != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s runs %s, not the embedded module", p.Name(), p.SHA256())
		}
	}
}
