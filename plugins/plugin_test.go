package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

func callInput(t testing.TB, args string) []byte {
	t.Helper()
	b, err := json.Marshal(abi.ToolCallInput{Name: "a__echo", Server: "a", Tool: "echo", Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodedDecision(t testing.TB, out []byte) *abi.CallDecision {
	t.Helper()
	d, err := decodeCallDecision(out)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return d
}

func TestLoadDescribes(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	p := load(t, rt, policy(t, "x", "version", "1.2.3", "hooks", "tool_call,tool_result"))
	d := p.Describe()
	if d.ABI != abi.Version || d.Name != "x" || d.Version != "1.2.3" || strings.Join(d.Hooks, ",") != "tool_call,tool_result" {
		t.Fatalf("describe = %+v", d)
	}
	if p.HasHook(abi.HookToolsList) || !p.HasHook(abi.HookToolCall) {
		t.Fatal("hooks not as described")
	}
	st := p.Status()
	if st.State != StateLoaded || st.SHA256 != p.SHA256() || len(st.SHA256) != 64 {
		t.Fatalf("status = %+v", st)
	}
	if _, err := p.Call(context.Background(), abi.HookToolsList, nil); !errors.Is(err, ErrNoHook) {
		t.Fatalf("undescribed hook: %v", err)
	}
	out, err := p.Call(context.Background(), abi.HookToolCall, callInput(t, `{}`))
	if err != nil || decodedDecision(t, out).Action != abi.ActionAllow {
		t.Fatalf("call = %s, %v", out, err)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.wasm")
	os.WriteFile(empty, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	bigmem := filepath.Join(dir, "bigmem.wasm") // memory of 200 pages (12.5 MiB) minimum
	os.WriteFile(bigmem, []byte("\x00asm\x01\x00\x00\x00\x05\x04\x01\x00\xc8\x01"), 0o644)
	garbage := filepath.Join(dir, "garbage.wasm")
	os.WriteFile(garbage, []byte("\x00asm\x01\x00\x00\x00\x99garbage"), 0o644)
	pol := guest(t, "policy")
	wasm, _ := os.ReadFile(pol)
	src, _ := rt.resolve(Spec{Source: pol})

	tests := []struct {
		name string
		spec Spec
		want error
		msg  string
	}{
		{"no describe export", Spec{Source: empty}, ErrMissingExport, "mcphost_describe is not exported"},
		{"abi 2.0", policy(t, "p", "abi", "2.0"), ErrABIVersion, "built for ABI 2.0"},
		{"abi garbage", policy(t, "p", "abi", "one"), ErrInvalidDescribe, `abi "one" is not MAJOR.MINOR`},
		{"hook not exported", Spec{Source: guest(t, "describeonly")}, ErrMissingExport, `hook "tools_list" is named but mcphost_tools_list is not exported`},
		{"unknown hook", policy(t, "p", "hooks", "tool_call,frobnicate"), ErrInvalidDescribe, `unknown hook "frobnicate"`},
		{"describe invalid json", policy(t, "p", "mode.describe", "badjson"), ErrInvalidDescribe, "invalid character"},
		{"describe empty", policy(t, "p", "mode.describe", "empty"), ErrInvalidDescribe, "empty output"},
		{"describe plugin error", policy(t, "p", "mode.describe", "error"), &PluginError{}, "policy error from p"},
		{"describe panics", policy(t, "p", "mode.describe", "panic"), ErrTrap, "boom from p"},
		{"sha256 mismatch", Spec{Source: pol, SHA256: strings.Repeat("ab", 32)}, ErrChecksum, "sha256 mismatch"},
		{"sha256 not hex", Spec{Source: pol, SHA256: "abc"}, ErrSpec, "not 64 hex digits"},
		{"missing file", Spec{Source: filepath.Join(dir, "nope.wasm")}, ErrSource, "no such file"},
		{"not wasm", Spec{Source: garbage}, ErrCompile, "compile failed"},
		{"initial memory above the cap", Spec{Source: bigmem, Memory: 8 << 20}, ErrInstantiate, "initial memory exceeds the cap of 8388608 bytes"},
		{"unknown builtin", Spec{Source: "builtin:nope"}, ErrSource, "no builtin plugins"},
		{"memory too small", Spec{Source: pol, Memory: 1 << 20}, ErrSpec, "below the minimum"},
		{"bad on_error", Spec{Source: pol, OnError: "explode"}, ErrSpec, `on_error "explode"`},
	}
	_ = wasm
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := tt.spec
			if spec.Name == "" {
				spec.Name = "p"
			}
			p, err := rt.Load(context.Background(), spec)
			if err == nil {
				p.Close(context.Background())
				t.Fatal("loaded")
			}
			if pe, ok := tt.want.(*PluginError); ok {
				if !errors.As(err, &pe) {
					t.Fatalf("error %v is not a *PluginError", err)
				}
			} else if !errors.Is(err, tt.want) {
				t.Fatalf("error %v is not %v", err, tt.want)
			}
			var le *LoadError
			if !errors.As(err, &le) || le.Source != spec.Source || !strings.Contains(err.Error(), spec.Source) {
				t.Fatalf("error %v does not name the source %s", err, spec.Source)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
	// The right digest loads.
	load(t, rt, Spec{Name: "ok", Source: pol, SHA256: strings.ToUpper(src.sha)})
}

func TestBuiltinSharesOneModule(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(guest(t, "policy"))
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, RuntimeOptions{Builtin: func(name string) ([]byte, map[string]string, bool) {
		switch name {
		case "denier":
			return wasm, map[string]string{"name": "denier", "mode.tool_call": "deny", "reason": "builtin says no"}, true
		case "responder":
			return wasm, map[string]string{"name": "responder", "mode.tool_call": "respond"}, true
		}
		return nil, nil, false
	}})
	d := load(t, rt, Spec{Name: "d", Source: "builtin:denier", Config: map[string]string{"reason": "user says no"}})
	r := load(t, rt, Spec{Name: "r", Source: "builtin:responder", Instances: 1})
	if n := rt.Modules(); n != 1 {
		t.Fatalf("%d compiled modules for one .wasm", n)
	}
	out, err := d.Call(context.Background(), abi.HookToolCall, callInput(t, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := decodedDecision(t, out); got.Action != abi.ActionDeny || got.Reason != "user says no" {
		t.Fatalf("user config does not override builtin config: %+v", got)
	}
	out, err = r.Call(context.Background(), abi.HookToolCall, callInput(t, `{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := decodedDecision(t, out); got.Action != abi.ActionRespond || got.Result.Content[0].Text != `responder@v1:{"x":1}` {
		t.Fatalf("respond = %s", out)
	}
	d.Close(context.Background())
	r.Close(context.Background())
	if n := rt.Modules(); n != 0 {
		t.Fatalf("%d compiled modules after every plugin closed", n)
	}
	if _, err := rt.Load(context.Background(), Spec{Name: "x", Source: "builtin:nope"}); !errors.Is(err, ErrSource) {
		t.Fatalf("unknown builtin: %v", err)
	}
}

// callMode calls tool_call with {"_mode": mode}.
func callMode(p *Plugin, mode string) ([]byte, error) {
	in, _ := json.Marshal(abi.ToolCallInput{Server: "a", Tool: "t", Arguments: json.RawMessage(`{"_mode":"` + mode + `"}`)})
	return p.Call(context.Background(), abi.HookToolCall, in)
}

// mustRecover checks that the plugin serves a normal call after a crash.
func mustRecover(t *testing.T, p *Plugin) {
	t.Helper()
	out, err := callMode(p, "allow")
	if err != nil {
		t.Fatalf("call after crash: %v", err)
	}
	if d := decodedDecision(t, out); d.Action != abi.ActionAllow {
		t.Fatalf("call after crash: %s", out)
	}
}

func TestHostileGuests(t *testing.T) {
	rt := newRuntime(t, RuntimeOptions{})

	t.Run("loop times out, host stays responsive", func(t *testing.T) {
		spec := policy(t, "looper")
		spec.Timeout = 200 * time.Millisecond
		p := load(t, rt, spec)
		var ticks atomic.Int64
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
					ticks.Add(1)
				}
			}
		}()
		done := make(chan error, 1)
		start := time.Now()
		go func() { _, err := callMode(p, "loop"); done <- err }()
		// While one instance loops, the other serves and the host runs.
		time.Sleep(50 * time.Millisecond)
		if _, err := callMode(p, "allow"); err != nil {
			t.Fatalf("concurrent call during a loop: %v", err)
		}
		err := <-done
		close(stop)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("loop: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("timeout took %v", d)
		}
		if n := ticks.Load(); n < 10 {
			t.Fatalf("host goroutine ticked %d times during the loop", n)
		}
		mustRecover(t, p)
		if st := p.Status(); st.Crashes != 1 || st.ConsecutiveCrashes != 0 || !strings.Contains(st.LastError, "timed out") {
			t.Fatalf("status = %+v", st)
		}
	})

	t.Run("tools_list has its own timeout", func(t *testing.T) {
		spec := policy(t, "slowlist", "mode.tools_list", "loop")
		spec.Timeout = 20 * time.Millisecond
		spec.ListTimeout = 300 * time.Millisecond
		p := load(t, rt, spec)
		start := time.Now()
		_, err := p.Call(context.Background(), abi.HookToolsList, []byte(`{"tools":[]}`))
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "after 300ms") || time.Since(start) < 300*time.Millisecond {
			t.Fatalf("tools_list: %v after %v", err, time.Since(start))
		}
	})

	t.Run("unbounded allocation hits the memory cap", func(t *testing.T) {
		spec := policy(t, "hog")
		spec.Memory = 32 << 20
		spec.Timeout = 20 * time.Second
		p := load(t, rt, spec)
		_, err := callMode(p, "alloc")
		if !errors.Is(err, ErrTrap) || !errors.Is(err, ErrMemoryLimit) {
			t.Fatalf("alloc: %v", err)
		}
		mustRecover(t, p)
	})

	t.Run("panic traps and the instance is replaced", func(t *testing.T) {
		p := load(t, rt, policy(t, "panicker"))
		_, err := callMode(p, "panic")
		var te *TrapError
		if !errors.As(err, &te) || !errors.Is(err, ErrTrap) {
			t.Fatalf("panic: %v", err)
		}
		if !strings.Contains(te.Stderr, "boom from panicker") {
			t.Fatalf("stderr tail %q lacks the panic message", te.Stderr)
		}
		for range 5 { // more calls than instances: every replacement works
			mustRecover(t, p)
		}
	})

	t.Run("exit", func(t *testing.T) {
		p := load(t, rt, policy(t, "exiter"))
		_, err := callMode(p, "exit")
		var te *TrapError
		if !errors.As(err, &te) || te.ExitCode != 3 {
			t.Fatalf("exit: %v", err)
		}
		mustRecover(t, p)
	})

	t.Run("plugin error keeps the instance", func(t *testing.T) {
		spec := policy(t, "erring")
		spec.Instances = 1
		p := load(t, rt, spec)
		_, err := callMode(p, "error")
		var pe *PluginError
		if !errors.As(err, &pe) || pe.Message != "policy error from erring" || pe.Code != 1 || pe.Hook != abi.HookToolCall {
			t.Fatalf("error: %#v", err)
		}
		if st := p.Status(); st.Crashes != 0 || st.Failures != 1 {
			t.Fatalf("status = %+v", st)
		}
		in := <-p.idle // the same instance is back in the pool
		p.idle <- in
		mustRecover(t, p)
	})

	t.Run("50 MB output is too large", func(t *testing.T) {
		spec := policy(t, "big")
		spec.Memory = 256 << 20
		spec.Timeout = time.Minute
		p := load(t, rt, spec)
		start := time.Now()
		defer func() { t.Logf("50 MB output took %v", time.Since(start)) }()
		if _, err := callMode(p, "big"); !errors.Is(err, ErrOutputTooLarge) {
			t.Fatalf("big: %v", err)
		}
		mustRecover(t, p)
	})

	t.Run("crash loop fails fast", func(t *testing.T) {
		p := load(t, rt, policy(t, "crasher"))
		for i := range CrashLimit {
			if _, err := callMode(p, "panic"); !errors.Is(err, ErrTrap) {
				t.Fatalf("crash %d: %v", i, err)
			}
		}
		start := time.Now()
		if _, err := callMode(p, "allow"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("after %d crashes: %v", CrashLimit, err)
		}
		if d := time.Since(start); d > 10*time.Millisecond {
			t.Fatalf("failing fast took %v", d)
		}
		if st := p.Status(); st.State != StateFailed || st.RetryAt.IsZero() || st.ConsecutiveCrashes != CrashLimit {
			t.Fatalf("status = %+v", st)
		}
		// After the backoff one call is let through; success clears it.
		p.mu.Lock()
		p.until = time.Now().Add(-time.Millisecond)
		p.mu.Unlock()
		mustRecover(t, p)
		if st := p.Status(); st.State != StateLoaded {
			t.Fatalf("status after recovery = %+v", st)
		}
	})
}

func TestSandboxGrants(t *testing.T) {
	rt := newRuntime(t, RuntimeOptions{})
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("s3cret"), 0o644)
	text := func(p *Plugin, mode string) string {
		t.Helper()
		out, err := callMode(p, mode)
		if err != nil {
			t.Fatal(err)
		}
		return decodedDecision(t, out).Result.Content[0].Text
	}
	t.Setenv("SECRET", "host-secret")
	bare := load(t, rt, policy(t, "bare", "file", "/data/secret.txt"))
	if got := text(bare, "env"); got != "env=" {
		t.Fatalf("environment leaked: %q", got)
	}
	if got := text(bare, "fs"); !strings.HasPrefix(got, "fserr=") {
		t.Fatalf("filesystem without a grant: %q", got)
	}
	spec := policy(t, "granted", "file", "/data/secret.txt")
	spec.Env = map[string]string{"SECRET": "given"}
	spec.AllowedPaths = map[string]string{"ro:" + dir: "/data"}
	granted := load(t, rt, spec)
	if got := text(granted, "env"); got != "env=given" {
		t.Fatalf("env grant: %q", got)
	}
	if got := text(granted, "fs"); got != "fs=s3cret" {
		t.Fatalf("path grant: %q", got)
	}
}

func TestGuestLogsGoToHostLogger(t *testing.T) {
	t.Parallel()
	var buf testproc.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace})
	rt := newRuntime(t, RuntimeOptions{Logger: log})
	p := load(t, rt, policy(t, "chatty"))
	if _, err := p.Call(context.Background(), abi.HookToolCall, callInput(t, `{"_log":"hello from the guest"}`)); err != nil {
		t.Fatal(err)
	}
	callMode(p, "panic")
	s := buf.String()
	if !strings.Contains(s, "[INFO]  chatty: hello from the guest") {
		t.Fatalf("guest log missing:\n%s", s)
	}
	if !strings.Contains(s, "[WARN]  chatty: panic: boom from chatty: stream=stderr") {
		t.Fatalf("guest stderr missing:\n%s", s)
	}
}

// TestHammer runs many goroutines through a small pool and checks every
// output against its own input: an instance shared by two calls would mix
// them up.
func TestHammer(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	spec := policy(t, "echo", "mode.tool_call", "respond")
	spec.Instances = 3
	p := load(t, rt, spec)
	const goroutines, calls = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				args := `{"g":` + itoa(g) + `,"i":` + itoa(i) + `,"pad":"` + strings.Repeat("x", g*i%97) + `"}`
				out, err := p.Call(context.Background(), abi.HookToolCall, callInput(t, args))
				if err != nil {
					errs <- err
					return
				}
				d, err := decodeCallDecision(out)
				if err != nil {
					errs <- err
					return
				}
				if want := "echo@v1:" + args; d.Result.Content[0].Text != want {
					errs <- errors.New("got " + d.Result.Content[0].Text + " want " + want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := p.Status(); st.Calls != goroutines*calls || st.Failures != 0 {
		t.Fatalf("status = %+v", st)
	}
}

func itoa(i int) string { return strconvItoa(i) }

func strconvItoa(i int) string { return strconv.Itoa(i) }
