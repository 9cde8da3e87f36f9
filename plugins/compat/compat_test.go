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

// policyGuest builds the plugins package's configurable test guest, whose
// behaviour (well-behaved or not) is chosen by its config.
func policyGuest(t *testing.T) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	paths, err := testproc.BuildWasm(filepath.Join(base, "mcphost-test", "compat-guests"),
		[]string{"../testdata/guests/policy/*.go", "../../abi/*.go", "../../go.mod", "../../go.sum"},
		map[string]testproc.WasmGuest{"policy": {Pkg: "../testdata/guests/policy"}})
	testproc.NeedGuests(t, err)
	return paths["policy"]
}

// TestProbe: a guest that keeps the ABI passes; one that answers garbage,
// or breaks its hints' promises, fails where it does.
func TestProbe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, err := plugins.NewRuntime(ctx, plugins.RuntimeOptions{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	wasm := policyGuest(t)
	spec := func(kv ...string) plugins.Spec {
		cfg := map[string]string{"name": "p", "hooks": "tools_list,tool_call,tool_result,list,request,message"}
		for i := 0; i+1 < len(kv); i += 2 {
			cfg[kv[i]] = kv[i+1]
		}
		return plugins.Spec{Name: "p", Source: wasm, Config: cfg, Timeout: 5 * time.Second}
	}
	failures := func(rs []Result) string {
		var names []string
		for _, r := range rs {
			if r.Err != nil {
				names = append(names, r.Name)
			}
		}
		return strings.Join(names, "; ")
	}

	if got := failures(Probe(ctx, rt, spec("mode.message", "unchanged"))); got != "" {
		t.Errorf("a guest that keeps the ABI failed: %s", got)
	}
	if got := failures(Probe(ctx, rt, spec("mode.tool_call", "badjson"))); !strings.Contains(got, "tool_call: no arguments") {
		t.Errorf("a guest answering tool_call with garbage: failures %q", got)
	}
	// It appends a text block to every result, so it cannot promise to
	// leave small ones alone.
	if got := failures(Probe(ctx, rt, spec("mode.message", "unchanged", "hints", `{"resultMinBytes":100000}`))); got != "hints: resultMinBytes" {
		t.Errorf("a guest breaking resultMinBytes: failures %q", got)
	}
	// Reversing the listing keeps every tool, but not the order that
	// listPerTool promises.
	if got := failures(Probe(ctx, rt, spec("mode.message", "unchanged", "mode.tools_list", "reverse", "hints", `{"listPerTool":true}`))); got != "hints: listPerTool" {
		t.Errorf("a guest breaking listPerTool: failures %q", got)
	}
}
