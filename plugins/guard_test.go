//go:build !mcphost_extism

package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// TestRecurseWasmMatchesWat: the committed .wasm files of testdata/recurse
// are built from the .wat beside them. It skips without wat2wasm (wabt).
func TestRecurseWasmMatchesWat(t *testing.T) {
	t.Parallel()
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("no wat2wasm on PATH")
	}
	wats, err := filepath.Glob("testdata/recurse/*.wat")
	if err != nil || len(wats) == 0 {
		t.Fatalf("no .wat files: %v", err)
	}
	for _, wat := range wats {
		wasm := strings.TrimSuffix(wat, ".wat") + ".wasm"
		built := filepath.Join(t.TempDir(), "out.wasm")
		if out, err := exec.Command(wat2wasm, wat, "-o", built).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", wat, err, out)
		}
		want, err := os.ReadFile(built)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(wasm); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not built from %s (%v): rebuild it with wat2wasm", wasm, wat, err)
		}
	}
}

// TestGuestsStopWhateverControlFlow: a guest stops at its timeout whether
// it loops, recurses without a loop (hand-written, with and without the
// import the rewriter needs, and in Go), loops over large bulk memory
// instructions or sleeps in a host import, under both ways of stopping
// guests; the instance is thrown away, the host's goroutines and garbage
// collector keep running meanwhile, and the plugin keeps serving.
func TestGuestsStopWhateverControlFlow(t *testing.T) {
	const timeout = 200 * time.Millisecond
	type guestCase struct {
		name    string
		spec    func(t *testing.T) Spec
		mode    string // the tool_call _mode of the Go guest
		guarded bool   // refused by the rewriter
	}
	cases := []guestCase{
		{"wat-recurse", func(*testing.T) Spec { return recurseGuest("rec", "recurse.wasm") }, "", false},
		{"wat-recurse-nolength", func(*testing.T) Spec { return recurseGuest("recnl", "recurse-nolength.wasm") }, "", true},
		{"wat-bulk", func(*testing.T) Spec { return recurseGuest("bulk", "bulk.wasm") }, "", false},
		{"go-recurse", func(t *testing.T) Spec { return policy(t, "gorec") }, "recurse", false},
		{"go-sleep", func(t *testing.T) Spec { return policy(t, "gosleep") }, "sleep", false},
		{"go-loop", func(t *testing.T) Spec { return policy(t, "goloop") }, "loop", false},
	}
	for _, mode := range []struct {
		name string
		opts RuntimeOptions
	}{{"instrumented", RuntimeOptions{}}, {"closeondone", RuntimeOptions{CloseOnContextDone: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			rt := newRuntime(t, mode.opts)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					spec := c.spec(t)
					spec.Timeout = timeout
					p := load(t, rt, spec)
					if p.mod.cm.guarded != c.guarded {
						t.Fatalf("guarded %v, want %v", p.mod.cm.guarded, c.guarded)
					}
					in, _ := json.Marshal(abi.ToolCallInput{Server: "a", Tool: "t", Arguments: json.RawMessage(`{"_mode":"` + c.mode + `"}`)})
					ticks := hostTicks(t)
					for i := range 2 { // twice: the plugin keeps serving after a crash
						gc := make(chan time.Duration, 1)
						if i == 0 { // a collection needs the guest's goroutine to stop
							time.AfterFunc(timeout/4, func() {
								start := time.Now()
								runtime.GC()
								gc <- time.Since(start)
							})
						}
						start := time.Now()
						_, err := callBounded(t, p, in, timeout+5*time.Second)
						d := time.Since(start)
						if i == 0 {
							if d := <-gc; d > time.Second {
								t.Errorf("runtime.GC took %v while the guest ran", d)
							}
						}
						if !errors.Is(err, ErrTimeout) {
							t.Fatalf("call %d: %v, want a timeout", i, err)
						}
						if d < timeout || d > timeout+300*time.Millisecond {
							t.Errorf("call %d stopped after %v, timeout %v", i, d, timeout)
						}
					}
					// Over 400 ms of guests running, on a loaded machine.
					if n := ticks.Load(); n < 10 {
						t.Errorf("a host goroutine ticked %d times meanwhile", n)
					}
					if st := p.Status(); st.Crashes != 2 || st.State != StateLoaded {
						t.Errorf("status %+v, want 2 instances thrown away and still loaded", st)
					}
					if c.mode != "" {
						mustRecover(t, p)
					}
				})
			}
		})
	}
}

// TestCloseStopsGuests: shutdown never waits on a guest. A plugin's Close
// whose context ends, and the runtime's Halt and Close, stop calls in
// flight however long their timeout, whether they recurse or loop over
// bulk memory instructions; the calls fail with ErrClosed.
func TestCloseStopsGuests(t *testing.T) {
	in, _ := json.Marshal(abi.ToolCallInput{Server: "a", Tool: "t", Arguments: json.RawMessage(`{}`)})
	// start loads the guest in file with a long timeout and starts two
	// calls, returning once both run.
	start := func(t *testing.T, rt *Runtime, file string) (*Plugin, chan error) {
		spec := recurseGuest("rec", file)
		spec.Timeout = time.Minute
		p, err := rt.Load(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 2)
		for range 2 {
			go func() {
				_, err := p.Call(context.Background(), abi.HookToolCall, in)
				errs <- err
			}()
		}
		testproc.WaitFor(t, "two calls running", 10*time.Second, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return len(p.running) == 2
		})
		return p, errs
	}
	wait := func(t *testing.T, errs chan error, limit time.Duration) {
		t.Helper()
		for range 2 {
			select {
			case err := <-errs:
				if !errors.Is(err, ErrClosed) {
					t.Errorf("call: %v, want ErrClosed", err)
				}
			case <-time.After(limit):
				t.Fatalf("a call still runs %v after shutdown", limit)
			}
		}
	}
	for _, file := range []string{"recurse.wasm", "bulk.wasm"} {
		for _, mode := range []struct {
			name string
			opts RuntimeOptions
		}{{"instrumented", RuntimeOptions{}}, {"closeondone", RuntimeOptions{CloseOnContextDone: true}}} {
			t.Run(mode.name+"/"+file+"/plugin-close", func(t *testing.T) {
				rt := newRuntime(t, mode.opts)
				p, errs := start(t, rt, file)
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				begin := time.Now()
				if err := p.Close(ctx); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(begin); d > time.Second {
					t.Errorf("Close took %v", d)
				}
				wait(t, errs, 2*time.Second)
				if st := p.Status(); st.State != StateClosed || st.Crashes != 0 {
					t.Errorf("status %+v", st)
				}
			})
			t.Run(mode.name+"/"+file+"/runtime-halt", func(t *testing.T) {
				rt := newRuntime(t, mode.opts)
				p, errs := start(t, rt, file)
				defer p.Close(context.Background())
				rt.Halt()
				wait(t, errs, 2*time.Second)
				if _, err := p.Call(context.Background(), abi.HookToolCall, in); !errors.Is(err, ErrClosed) {
					t.Errorf("call after Halt: %v", err)
				}
			})
			t.Run(mode.name+"/"+file+"/runtime-close", func(t *testing.T) {
				rt := newRuntime(t, mode.opts)
				_, errs := start(t, rt, file)
				begin := time.Now()
				if err := rt.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				wait(t, errs, 2*time.Second)
				if d := time.Since(begin); d > 2*time.Second {
					t.Errorf("Close and the calls took %v", d)
				}
			})
		}
	}
}

// hostTicks counts, every 2 ms until the test ends, that a host goroutine
// still gets to run: a guest must never hold the process.
func hostTicks(t testing.TB) *atomic.Int64 {
	var ticks atomic.Int64
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				ticks.Add(1)
			}
		}
	}()
	return &ticks
}
