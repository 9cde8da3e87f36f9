package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Test guests are real Go plugins, built once per source hash with the
// toolchain running the tests and cached under the user cache directory, so
// reruns cost nothing. Tests skip only when there is no go on PATH.
var (
	guestErr   error             // why guests are unavailable
	guestPaths map[string]string // name -> path
	cacheDir   string            // wazero compilation cache shared by the tests
)

type guestBuild struct {
	name    string
	pkg     string
	ldflags string
}

var guestBuilds = []guestBuild{
	{name: "policy", pkg: "./testdata/guests/policy"},
	{name: "policy-v2", pkg: "./testdata/guests/policy", ldflags: "-X main.buildVersion=v2"},
	{name: "describeonly", pkg: "./testdata/guests/describeonly"},
	{name: "fsescape", pkg: "./testdata/guests/fsescape"},
	{name: "fdhog", pkg: "./testdata/guests/fdhog"},
	{name: "gopdk", pkg: "./testdata/guests/gopdk"},
}

// Tests share only the built guests and the compilation cache (written by
// rename), and call t.Parallel. Not parallel: tests that hold a guest or a
// check to a deadline or count host ticks (another test would take their
// CPU), that count the process's descriptors, heap or mappings, or that
// use t.Setenv.
func TestMain(m *testing.M) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cacheDir = filepath.Join(base, "mcphost-test", "wazero")
	guestErr = buildGuests(filepath.Join(base, "mcphost-test", "guests"))
	if guestErr != nil && !errors.Is(guestErr, testproc.ErrNoToolchain) {
		fmt.Fprintln(os.Stderr, "building test guests:", guestErr)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// buildGuests builds every guest whose sources changed since the last run.
func buildGuests(dir string) error {
	guests := make(map[string]testproc.WasmGuest, len(guestBuilds))
	for _, g := range guestBuilds {
		guests[g.name] = testproc.WasmGuest{Pkg: g.pkg, LDFlags: g.ldflags}
	}
	var err error
	guestPaths, err = testproc.BuildWasm(dir, []string{"testdata/guests/*/*.go", "../abi/*.go", "../abi/pdk/*.go", "../go.mod", "../go.sum"}, guests)
	return err
}

// guest returns the path of a built test guest, skipping without go.
func guest(t testing.TB, name string) string {
	t.Helper()
	testproc.NeedGuests(t, guestErr)
	p, ok := guestPaths[name]
	if !ok {
		t.Fatalf("no guest %q", name)
	}
	return p
}

// newRuntime returns a runtime using the shared test compilation cache,
// closed at the end of the test.
func newRuntime(t testing.TB, opts RuntimeOptions) *Runtime {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = cacheDir
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	rt, err := NewRuntime(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// testLogger logs through t.Log in verbose runs.
func testLogger(t testing.TB) hclog.Logger {
	if !testing.Verbose() {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Output: tWriter{t}, Level: hclog.Debug})
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = tWriter{}

// policy returns a spec of the policy guest with config pairs k, v, ...
func policy(t testing.TB, name string, kv ...string) Spec {
	t.Helper()
	cfg := map[string]string{"name": name}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	return Spec{Name: name, Source: guest(t, "policy"), Config: cfg, Instances: 2, Timeout: 2 * time.Second}
}

// load loads a spec, closing the plugin at the end of the test.
func load(t testing.TB, rt *Runtime, spec Spec) *Plugin {
	t.Helper()
	p, err := rt.Load(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// recurseGuest returns the spec of a hand-written guest of testdata/recurse,
// whose tool_call recurses without a loop (recurse*.wasm) or loops over
// bulk memory instructions (bulk.wasm).
func recurseGuest(name, file string) Spec {
	return Spec{Name: name, Source: "testdata/recurse/" + file, Instances: 2, Timeout: 2 * time.Second}
}

// callBounded calls tool_call and fails the test if the call has not
// returned within limit (a guest that cannot be stopped).
func callBounded(t *testing.T, p *Plugin, in []byte, limit time.Duration) ([]byte, error) {
	t.Helper()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := p.Call(context.Background(), abi.HookToolCall, in)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(limit):
		t.Fatalf("the call was not stopped after %v", limit)
		return nil, nil
	}
}
