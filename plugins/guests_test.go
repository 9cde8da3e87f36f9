package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Test guests are real Go plugins, built once per source hash with the
// toolchain running the tests and cached under the user cache directory, so
// reruns cost nothing. Tests skip only when there is no go on PATH.
var (
	guestDir   string            // directory with the built .wasm files
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
}

func TestMain(m *testing.M) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cacheDir = filepath.Join(base, "mcphost-test", "wazero")
	guestErr = buildGuests(filepath.Join(base, "mcphost-test", "guests"))
	if guestErr != nil && !strings.Contains(guestErr.Error(), "no go") {
		fmt.Fprintln(os.Stderr, "building test guests:", guestErr)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// buildGuests builds every guest whose sources changed since the last run.
func buildGuests(dir string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("no go on PATH: %w", err)
	}
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, pattern := range []string{"testdata/guests/*/*.go", "../abi/*.go", "../go.mod", "../go.sum"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", f, len(b))
			h.Write(b)
		}
	}
	guestDir = filepath.Join(dir, hex.EncodeToString(h.Sum(nil))[:16])
	if err := os.MkdirAll(guestDir, 0o755); err != nil {
		return err
	}
	guestPaths = map[string]string{}
	var wg sync.WaitGroup
	errs := make([]error, len(guestBuilds))
	for i, g := range guestBuilds {
		out := filepath.Join(guestDir, g.name+".wasm")
		guestPaths[g.name] = out
		if _, err := os.Stat(out); err == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tmp := out + ".tmp"
			args := []string{"build", "-buildmode=c-shared", "-o", tmp}
			if g.ldflags != "" {
				args = append(args, "-ldflags="+g.ldflags)
			}
			cmd := exec.Command(gobin, append(args, g.pkg)...)
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go build %s: %v\n%s", g.name, err, b)
				return
			}
			errs[i] = os.Rename(tmp, out)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// guest returns the path of a built test guest, skipping without go.
func guest(t testing.TB, name string) string {
	t.Helper()
	if guestErr != nil {
		t.Skip(guestErr)
	}
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
