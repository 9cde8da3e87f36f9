package compat

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
	"github.com/mcphost-project/mcphost/plugins"
)

// toolGuests builds the tool plugin test guests of host/toolplugin and the
// jsoncsv example.
func toolGuests(t *testing.T) map[string]string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	paths, err := testproc.BuildWasm(filepath.Join(base, "mcphost-test", "compat-toolguests"),
		[]string{"../../host/toolplugin/testdata/guests/*/*.go", "../../examples/tools/jsoncsv/*.go", "../../abi/*.go", "../../abi/pdk/*.go", "../../abi/pdk/tool/*.go", "../../go.mod", "../../go.sum"},
		map[string]testproc.WasmGuest{
			"typed":   {Pkg: "../../host/toolplugin/testdata/guests/typed"},
			"raw":     {Pkg: "../../host/toolplugin/testdata/guests/raw"},
			"jsoncsv": {Pkg: "../../examples/tools/jsoncsv"},
		})
	testproc.NeedGuests(t, err)
	return paths
}

// TestProbeTools: tool plugins in Go and AssemblyScript that keep the ABI
// pass the kit's tool checks; one that loops, crashes, answers in the
// wrong shape or breaks its output schema fails exactly there.
func TestProbeTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	// A compile cache that outlives the run: four Go guests compile in
	// seconds each, far longer under the race detector.
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: filepath.Join(base, "mcphost-test", "compat-wazero")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	g := toolGuests(t)
	semver, _ := filepath.Abs("../../examples/tools/as-semver/semver.wasm")
	check := func(name, path string, grants func(*plugins.Spec)) map[string]error {
		spec := plugins.Spec{Name: name, Source: path, Timeout: 2 * time.Second, Memory: 64 << 20}
		if grants != nil {
			grants(&spec)
		}
		m := map[string]error{}
		for _, r := range Probe(ctx, rt, spec) {
			m[r.Name] = r.Err
		}
		return m
	}
	for name, path := range map[string]string{"jsoncsv": g["jsoncsv"], "semver": semver} {
		rs := check(name, path, nil)
		if len(rs) < 5 {
			t.Errorf("%s: only %d checks: %v", name, len(rs), rs)
		}
		for n, err := range rs {
			if err != nil {
				t.Errorf("%s: %s: %v", name, n, err)
			}
		}
	}
	// The typed guest keeps the ABI, given the grants its tools use.
	rs := check("typed", g["typed"], func(s *plugins.Spec) {
		s.Kind, s.KV, s.Progress, s.ClientLog, s.AllowedHosts = plugins.KindTools, true, true, true, []string{"127.0.0.1"}
	})
	for n, err := range rs {
		// fetch's minimal URL ("a") is refused by the host's HTTP rules: a trap.
		if err != nil && !strings.HasPrefix(n, "tool_invoke: fetch:") {
			t.Errorf("typed: %s: %v", n, err)
		}
	}
	if rs["tool_invoke: echo: unknown fields"] != nil || rs["tools: 8 definitions"] != nil {
		t.Errorf("typed: %v", rs)
	}

	// Small limits: its loop, allocation and 50 MB answer fail fast.
	rs = check("raw", g["raw"], func(s *plugins.Spec) { s.Timeout, s.Memory = 500*time.Millisecond, 16<<20 })
	for _, want := range []string{"loop", "alloc", "crash", "shape", "badout"} {
		if err := rs["tool_invoke: "+want+": minimal arguments"]; err == nil {
			t.Errorf("raw: %s passed", want)
		}
	}
	if err := rs["tool_invoke: fielderr: minimal arguments"]; err != nil {
		t.Errorf("raw: a tool error failed: %v", err)
	}
	if err := rs["tool_invoke: an unknown tool"]; err == nil {
		t.Error("raw answers an unknown tool with nothing, and passed")
	}
}
