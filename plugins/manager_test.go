package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/filters"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

func newManager(t *testing.T, rt *Runtime, opts *ManagerOptions) *Manager {
	t.Helper()
	m, err := NewManager(rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// respondText calls tool_call through a policy and returns the text of a
// respond decision.
func respondText(ctx context.Context, p interface {
	ToolCall(context.Context, *abi.ToolCallInput) (*abi.CallDecision, error)
}, args string) (string, error) {
	d, err := p.ToolCall(ctx, &abi.ToolCallInput{Server: "a", Tool: "t", Arguments: json.RawMessage(args)})
	if err != nil {
		return "", err
	}
	if d.Action != abi.ActionRespond {
		return "", errors.New("not a respond: " + d.Action + " " + d.Reason)
	}
	return d.Result.Content[0].Text, nil
}

func TestManagerBeforeFirstReloadPassesThrough(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	m := newManager(t, rt, nil)
	tools, err := m.ToolsList(context.Background(), &abi.ToolsListInput{Tools: catalog()})
	if err != nil || names(tools) != names(catalog()) || m.Generation() != 0 {
		t.Fatal(tools, err)
	}
	if d, err := m.ToolCall(context.Background(), &abi.ToolCallInput{}); err != nil || d.Action != abi.ActionAllow {
		t.Fatal(d, err)
	}
}

// swapCounter is a Listener that counts swaps and passes on the outcome
// of each reload the watcher starts.
type swapCounter struct {
	atomic.Int64
	watched chan error // nil: not passed on
}

func (c *swapCounter) BeforeSwap(context.Context, *Chain) {}
func (c *swapCounter) Swapped()                           { c.Add(1) }
func (c *swapCounter) WatchReloaded(err error) {
	if c.watched != nil {
		c.watched <- err
	}
}

// nextWatchReload waits for the watcher's next reload and returns its
// outcome.
func (c *swapCounter) nextWatchReload(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.watched:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not reload within 10s")
		return nil
	}
}

func TestManagerReload(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	var swaps swapCounter
	m := newManager(t, rt, nil)
	m.Attach(&swaps)
	ctx := context.Background()
	if err := m.Reload(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond")}); err != nil {
		t.Fatal(err)
	}
	g1 := m.Generation()
	if g1 == 0 {
		t.Fatal("generation 0 after a reload")
	}
	if s, err := respondText(ctx, m, `{}`); err != nil || s != "p@v1:{}" {
		t.Fatal(s, err)
	}
	first := m.Status()[0]

	// A reload that fails changes nothing.
	err := m.Reload(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond", "version", "v9"), {Name: "q", Source: "/nonexistent/q.wasm"}})
	var le *LoadError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "/nonexistent/q.wasm") {
		t.Fatalf("failed reload: %v", err)
	}
	if m.Generation() != g1 || swaps.Load() != 0 {
		t.Fatal("a failed reload changed the generation")
	}
	if s, err := respondText(ctx, m, `{}`); err != nil || s != "p@v1:{}" {
		t.Fatal(s, err)
	}
	// So does one with a module refused before compiling (internal/wasmrewrite).
	err = m.Reload(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond", "version", "v9"), recurseGuest("q", "tablehuge.wasm")})
	if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), "table 0 starts with 100000000 entries") {
		t.Fatalf("reload with a huge table: %v", err)
	}
	if m.Generation() != g1 || swaps.Load() != 0 {
		t.Fatal("a failed reload changed the generation")
	}

	// The same specs again: nothing to swap.
	if err := m.Reload(ctx, m.Specs()); err != nil || m.Generation() != g1 || swaps.Load() != 0 {
		t.Fatalf("no-op reload: %v, generation %d -> %d", err, g1, m.Generation())
	}

	// A change swaps; unchanged plugins are carried over, not reloaded.
	if err := m.Reload(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond"), policy(t, "q", "mode.tool_call", "deny")}); err != nil {
		t.Fatal(err)
	}
	if m.Generation() <= g1 || swaps.Load() != 1 {
		t.Fatal("no swap")
	}
	if st := m.Status(); st[0].Calls != first.Calls+1 {
		t.Fatalf("unchanged plugin was reloaded: %+v", st[0])
	}
	if err := m.Reload(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond", "version", "v2")}); err != nil {
		t.Fatal(err)
	}
	if s, err := respondText(ctx, m, `{}`); err != nil || s != "p@v2:{}" {
		t.Fatal(s, err)
	}
}

// TestSwapUnderLoad swaps generations many times while calls run at a
// steady rate: no call may fail, and every output must come from one of
// the versions, for its own input.
func TestSwapUnderLoad(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	m := newManager(t, rt, nil)
	ctx := context.Background()
	spec := func(v string) []Spec {
		s := policy(t, "p", "mode.tool_call", "respond", "version", v)
		s.Instances = 2
		return []Spec{s}
	}
	if err := m.Reload(ctx, spec("v0")); err != nil {
		t.Fatal(err)
	}
	const swaps, workers = 60, 4
	var calls, failures atomic.Int64
	seen := sync.Map{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				args := `{"w":` + itoa(w) + `,"i":` + itoa(i) + `}`
				s, err := respondText(ctx, m, args)
				calls.Add(1)
				v, rest, ok := strings.Cut(strings.TrimPrefix(s, "p@"), ":")
				if err != nil || !ok || rest != args || !strings.HasPrefix(v, "v") {
					failures.Add(1)
					t.Errorf("call %s: %q, %v", args, s, err)
					continue
				}
				seen.Store(v, true)
			}
		}()
	}
	gens := map[uint64]bool{}
	chains := []*Chain{m.cur.Load()}
	for i := 1; i <= swaps; i++ {
		if err := m.Reload(ctx, spec("v"+itoa(i))); err != nil {
			t.Fatalf("swap %d: %v", i, err)
		}
		chains = append(chains, m.cur.Load())
		gens[m.Generation()] = true
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d of %d calls failed", failures.Load(), calls.Load())
	}
	versions := 0
	seen.Range(func(any, any) bool { versions++; return true })
	t.Logf("%d calls over %d swaps saw %d versions", calls.Load(), swaps, versions)
	if len(gens) != swaps || versions < swaps/4 {
		t.Fatalf("%d generations, %d versions seen", len(gens), versions)
	}
	// Old generations drain and close; one module was compiled for all.
	for i, c := range chains[:len(chains)-1] {
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("generation %d of %d never closed", i, len(chains))
		}
		for _, p := range c.Plugins() {
			if st := p.Status(); st.State != StateClosed {
				t.Fatalf("plugin of an old generation is %s", st.State)
			}
		}
	}
	if n := rt.Modules(); n != 1 {
		t.Fatalf("%d modules", n)
	}
}

// TestInFlightCallFinishesOnItsGeneration holds a call in the guest while
// a new generation is swapped in and the old one retired.
func TestInFlightCallFinishesOnItsGeneration(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	m := newManager(t, rt, nil)
	ctx := context.Background()
	s := policy(t, "p", "mode.tool_call", "respond")
	if err := m.Reload(ctx, []Spec{s}); err != nil {
		t.Fatal(err)
	}
	old := m.cur.Load()
	// A call that sleeps 300 ms in the guest.
	big := `{"_sleep_ms":300}`
	done := make(chan error, 1)
	go func() {
		got, err := respondText(ctx, m, big)
		if err == nil && got != "p@v1:"+big {
			err = errors.New("wrong output")
		}
		done <- err
	}()
	testproc.WaitFor(t, "the old generation to be in use", 10*time.Second, func() bool { return old.refs.Load() > 1 })
	if err := m.Reload(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond", "version", "v2")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.Done():
		t.Fatal("old generation closed with a call in flight")
	default:
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-old.Done()
}

func TestManagerWatchesFiles(t *testing.T) {
	t.Parallel()
	v1, err := os.ReadFile(guest(t, "policy"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := os.ReadFile(guest(t, "policy-v2"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.wasm")
	if err := os.WriteFile(path, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, RuntimeOptions{})
	swaps := swapCounter{watched: make(chan error, 16)}
	var logs testproc.Buffer
	m := newManager(t, rt, &ManagerOptions{Watch: true, Debounce: 50 * time.Millisecond,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	m.Attach(&swaps)
	ctx := context.Background()
	spec := Spec{Name: "p", Source: path, Config: map[string]string{"name": "p", "mode.tool_call": "respond"}, Timeout: 2 * time.Second}
	if err := m.Reload(ctx, []Spec{spec}); err != nil {
		t.Fatal(err)
	}
	version := func() string {
		s, err := respondText(ctx, m, `{}`)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if v := version(); v != "p@v1:{}" {
		t.Fatal(v)
	}
	g1 := m.Generation()

	// A half-written file fails to load: the old generation keeps serving.
	if err := os.WriteFile(path, v2[:len(v2)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := swaps.nextWatchReload(t); err == nil {
		t.Fatal("a half-written module loaded")
	}
	if v := version(); v != "p@v1:{}" || m.Generation() != g1 || swaps.Load() != 0 {
		t.Fatalf("after a half write: %s, generation %d", v, m.Generation())
	}

	// An editor-style replace: write beside, rename over.
	tmp := filepath.Join(dir, ".p.wasm.tmp")
	if err := os.WriteFile(tmp, v2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := swaps.nextWatchReload(t); err != nil || swaps.Load() != 1 {
		t.Fatalf("the rename: %v, %d swaps", err, swaps.Load())
	}
	if v := version(); v != "p@v2:{}" || m.Generation() == g1 {
		t.Fatalf("after the rename: %s", v)
	}

	// Other files in the directory do not trigger reloads: the next
	// reload the watcher starts is for the module alone.
	os.WriteFile(filepath.Join(dir, "other.txt"), []byte("x"), 0o644)
	if err := os.WriteFile(tmp, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := swaps.nextWatchReload(t); err != nil || swaps.Load() != 2 {
		t.Fatalf("the second rename: %v, %d swaps", err, swaps.Load())
	}
	if strings.Contains(logs.String(), "other.txt") {
		t.Fatalf("an unrelated file triggered a reload:\n%s", logs.String())
	}
}

func TestManagerClose(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	m, err := NewManager(rt, &ManagerOptions{Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Reload(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond")}); err != nil {
		t.Fatal(err)
	}
	c := m.cur.Load()
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := respondText(ctx, m, `{"_sleep_ms":200}`); done <- err }()
	testproc.WaitFor(t, "the chain to be in use", 10*time.Second, func() bool { return c.refs.Load() > 1 })
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("Close returned after %v, before the call in flight finished", d)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := m.ToolCall(ctx, &abi.ToolCallInput{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if err := m.Reload(ctx, []Spec{policy(t, "p")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("reload after Close: %v", err)
	}
	if n := rt.Modules(); n != 0 {
		t.Fatalf("%d modules after Close", n)
	}
}

// TestManagerWants checks what the host is told about hooks: nothing
// before the first generation, the current generation's hooks after each
// reload, and every hook once closed, so that closed hooks fail closed.
func TestManagerWants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, err := NewManager(newRuntime(t, RuntimeOptions{Builtin: filters.Builtin}), nil)
	if err != nil {
		t.Fatal(err)
	}
	wants := func() string {
		var got []string
		for _, h := range []string{abi.HookToolsList, abi.HookToolCall, abi.HookToolResult} {
			if m.Wants(h) {
				got = append(got, h)
			}
		}
		return strings.Join(got, ",")
	}
	if got := wants(); got != "" {
		t.Fatalf("before the first reload: %q", got)
	}
	if err := m.Reload(ctx, []Spec{{Name: "titles", Source: "builtin:titles"}}); err != nil {
		t.Fatal(err)
	}
	if got := wants(); got != "tools_list" {
		t.Fatalf("with titles: %q", got)
	}
	if err := m.Reload(ctx, []Spec{{Name: "truncate", Source: "builtin:truncate"}, {Name: "deny", Source: "builtin:deny", Config: map[string]string{"tools": `["x"]`}}}); err != nil {
		t.Fatal(err)
	}
	if got := wants(); got != "tools_list,tool_call,tool_result" {
		t.Fatalf("with truncate and deny: %q", got)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := wants(); got != "tools_list,tool_call,tool_result" {
		t.Fatalf("after Close: %q", got)
	}
}

// TestManagerStage checks the two halves of a reload that a caller swaps
// together with something else: a staged generation serves nothing until
// Commit, a discarded one changes nothing, and Swapped follows the commit.
func TestManagerStage(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, RuntimeOptions{})
	var swaps swapCounter
	m := newManager(t, rt, nil)
	m.Attach(&swaps)
	ctx := context.Background()
	if err := m.Reload(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond")}); err != nil {
		t.Fatal(err)
	}
	g1 := m.Generation()

	st, err := m.Stage(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond", "version", "v2")})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := respondText(ctx, m, `{}`); err != nil || s != "p@v1:{}" || m.Generation() != g1 {
		t.Fatalf("staged generation served before Commit: %q %v", s, err)
	}
	st.Close()  // discarded
	st.Commit() // after Close: nothing
	if s, err := respondText(ctx, m, `{}`); err != nil || s != "p@v1:{}" || swaps.Load() != 0 {
		t.Fatalf("discarded generation served: %q %v, swaps %d", s, err, swaps.Load())
	}

	st, err = m.Stage(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond", "version", "v3")})
	if err != nil {
		t.Fatal(err)
	}
	st.Commit()
	if s, err := respondText(ctx, m, `{}`); err != nil || s != "p@v3:{}" {
		t.Fatalf("after Commit: %q %v", s, err)
	}
	if swaps.Load() != 0 {
		t.Fatal("Swapped ran before Close")
	}
	st.Close()
	st.Close()
	if swaps.Load() != 1 {
		t.Fatalf("Swapped ran %d times, want 1", swaps.Load())
	}
	// The manager's lock was handed back: another reload runs.
	if err := m.Reload(ctx, []Spec{policy(t, "p", "mode.tool_call", "respond")}); err != nil {
		t.Fatal(err)
	}
}
