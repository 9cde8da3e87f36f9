package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
)

// DefaultDebounce is how long the watcher waits after the last change to a
// plugin file before it reloads.
const DefaultDebounce = 250 * time.Millisecond

// ManagerOptions configures a Manager; a nil *ManagerOptions means defaults.
type ManagerOptions struct {
	// Logger; nil means the runtime's.
	Logger hclog.Logger
	// Watch reloads when a plugin's .wasm file changes.
	Watch bool
	// Debounce; 0 means DefaultDebounce.
	Debounce time.Duration
}

// Listener is told of a Manager's generations: what a host serving the
// Manager as its policy must hear (host.Host has a method for each; see
// the engine package). Attach it once the host exists: a Manager has
// nobody to tell before, and a host built after the first Reload computes
// its listings from the generation it finds.
type Listener interface {
	// BeforeSwap is called with a new generation, loaded and ready, just
	// before it replaces the current one, so that the host can compute
	// what calls will need from it (tool listings) while the current one
	// still serves them. A reload waits for it.
	BeforeSwap(ctx context.Context, next *Chain)
	// Swapped is called after every swap to a new generation (so the host
	// can send notifications/tools/list_changed).
	Swapped()
	// WatchReloaded is told the outcome of every reload the file watcher
	// starts (nil: swapped in or unchanged), so that a failed one shows.
	WatchReloaded(err error)
}

// Manager holds the current Chain and swaps generations atomically: a new
// generation is built whole off to the side (loaded, described, pools
// warmed) and swapped in; calls in flight finish on the generation they
// started with, and the old generation is closed once drained. A reload
// that fails changes nothing.
//
// Manager implements host.Policy by delegating to the current generation;
// before the first successful Reload it lets everything through, after
// Close it fails every hook with ErrClosed.
type Manager struct {
	rt   *Runtime
	opts ManagerOptions
	log  hclog.Logger

	cur      atomic.Pointer[Chain]
	shut     atomic.Bool // Close was called: hooks fail closed
	listener atomic.Pointer[Listener]

	mu     sync.Mutex // serialises reloads
	specs  []Spec     // of the current generation
	closed bool

	watcher *fsnotify.Watcher
	wmu     sync.Mutex
	dirs    map[string]bool // watched directories
	files   map[string]bool // watched files (absolute)
	stop    chan struct{}
	stopped chan struct{}
}

// NewManager returns a Manager with no generation. With opts.Watch it starts
// watching; the returned error is then the watcher's.
func NewManager(rt *Runtime, opts *ManagerOptions) (*Manager, error) {
	m := &Manager{rt: rt, dirs: map[string]bool{}, files: map[string]bool{}}
	if opts != nil {
		m.opts = *opts
	}
	if m.opts.Debounce == 0 {
		m.opts.Debounce = DefaultDebounce
	}
	m.log = m.opts.Logger
	if m.log == nil {
		m.log = rt.log
	}
	if m.opts.Watch {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, err
		}
		m.watcher = w
		m.stop = make(chan struct{})
		m.stopped = make(chan struct{})
		go m.watch()
	}
	return m, nil
}

// Attach makes l the Manager's listener (nil: none), from the next event on.
func (m *Manager) Attach(l Listener) {
	if l == nil {
		m.listener.Store(nil)
		return
	}
	m.listener.Store(&l)
}

// tell returns the listener, or nil.
func (m *Manager) tell() Listener {
	if l := m.listener.Load(); l != nil {
		return *l
	}
	return nil
}

// Reload builds a generation from specs and swaps it in. On error the
// current generation keeps serving and the error (a *LoadError naming the
// plugin and its source) is returned and logged.
func (m *Manager) Reload(ctx context.Context, specs []Spec) error {
	st, err := m.Stage(ctx, specs)
	if err != nil {
		return err
	}
	st.Commit()
	st.Close()
	return nil
}

// Staged is a generation built whole (loaded, described, pools warmed) and
// not yet serving. Commit swaps it in; Close discards it unless committed
// and then reports the swap (Listener.Swapped). Other reloads wait
// from Stage until Commit or Close, so a caller can swap plugins together
// with something else, such as a host's server set. A Staged belongs to
// one goroutine.
type Staged struct {
	m          *Manager
	prev, next *Chain
	specs      []Spec
	start      time.Time
	committed  bool
	swapped    bool
	closed     bool
}

// Stage builds a generation from specs without swapping it in. On error
// nothing changed and the error (a *LoadError naming the plugin and its
// source) is returned and logged.
func (m *Manager) Stage(ctx context.Context, specs []Spec) (*Staged, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	start := time.Now()
	prev := m.cur.Load()
	next, err := m.rt.newChain(ctx, specs, prev)
	if err != nil {
		m.mu.Unlock()
		if prev == nil {
			m.log.Error("plugins cannot start", "error", err)
		} else {
			m.log.Error("reload failed; the current generation keeps serving", "error", err)
		}
		return nil, err
	}
	if l := m.tell(); l != nil && prev != nil && !samePlugins(prev, next) {
		l.BeforeSwap(ctx, next)
	}
	return &Staged{m: m, prev: prev, next: next, specs: append([]Spec(nil), specs...), start: start}, nil
}

// Commit swaps the staged generation in (calls in flight finish on the one
// they started with) and lets other reloads run. It is cheap and calls
// nothing outside the manager, so it may run under a caller's lock.
func (s *Staged) Commit() {
	if s.committed || s.closed {
		return
	}
	s.committed = true
	m := s.m
	defer m.mu.Unlock()
	m.specs = s.specs
	m.updateWatches(s.specs)
	if s.prev != nil && samePlugins(s.prev, s.next) {
		s.next.retire() // nothing changed: keep the current generation
		return
	}
	m.cur.Store(s.next)
	if s.prev != nil {
		s.prev.retire() // closes once its calls in flight have finished
	}
	s.swapped = s.prev != nil
	log := m.log.Info
	if s.prev == nil && len(s.specs) == 0 {
		log = m.log.Debug // a first generation of none is no news at start
	}
	log("plugins swapped in", "generation", s.next.Generation(), "plugins", len(s.specs), "took", time.Since(s.start))
}

// Close discards the generation if it was not committed, or else reports
// the swap to the listener (Listener.Swapped). Calling it again does
// nothing.
func (s *Staged) Close() {
	if s.closed {
		return
	}
	s.closed = true
	if !s.committed {
		s.next.retire()
		s.m.mu.Unlock()
		return
	}
	if l := s.m.tell(); s.swapped && l != nil {
		l.Swapped() // outside the lock: it may call back into m
	}
}

// Specs returns the specs of the current generation.
func (m *Manager) Specs() []Spec {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Spec(nil), m.specs...)
}

// Status returns the status of the current generation's plugins.
func (m *Manager) Status() []Status {
	c := m.acquire()
	if c == nil {
		return nil
	}
	defer c.release()
	return c.Status()
}

// acquire returns the current chain with a reference taken, or nil.
func (m *Manager) acquire() *Chain {
	for {
		c := m.cur.Load()
		if c == nil {
			return nil
		}
		if c.acquire() {
			return c
		}
		// c was retired and drained between Load and acquire: a newer one
		// is current; try again.
	}
}

// Generation implements host.Policy: 0 before the first generation.
func (m *Manager) Generation() uint64 {
	if c := m.cur.Load(); c != nil {
		return c.Generation()
	}
	return 0
}

// Wants reports whether the current generation runs hook, so the host can
// skip preparing the input of a hook nobody implements. Before the first
// generation it is false (everything passes); after Close, true, so that
// hooks are still asked and fail closed.
func (m *Manager) Wants(hook string) bool {
	if m.shut.Load() {
		return true
	}
	c := m.cur.Load()
	return c != nil && c.Wants(hook)
}

// onCurrent runs fn on the current generation, holding a reference for
// the call. Before the first generation it answers pass (everything goes
// through); after Close it fails with ErrClosed.
func onCurrent[T any](m *Manager, pass T, fn func(*Chain) (T, error)) (T, error) {
	c := m.acquire()
	if c == nil {
		if m.shut.Load() {
			var zero T
			return zero, ErrClosed
		}
		return pass, nil
	}
	defer c.release()
	return fn(c)
}

// ToolsList implements host.Policy.
func (m *Manager) ToolsList(ctx context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	return onCurrent(m, nonNil(in.Tools), func(c *Chain) ([]abi.Tool, error) { return c.toolsList(ctx, in) })
}

// ToolCall implements host.Policy.
func (m *Manager) ToolCall(ctx context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	return onCurrent(m, &abi.CallDecision{Action: abi.ActionAllow}, func(c *Chain) (*abi.CallDecision, error) { return c.toolCall(ctx, in) })
}

// ToolResult implements host.Policy.
func (m *Manager) ToolResult(ctx context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	return onCurrent(m, in.Result, func(c *Chain) (*abi.CallToolResult, error) { return c.toolResult(ctx, in) })
}

// List implements host.Policy.
func (m *Manager) List(ctx context.Context, in *abi.ListInput) ([]abi.Item, error) {
	return onCurrent(m, in.Items, func(c *Chain) ([]abi.Item, error) { return c.list(ctx, in) })
}

// Request implements host.Policy.
func (m *Manager) Request(ctx context.Context, in *abi.RequestInput) (*abi.RequestDecision, error) {
	return onCurrent(m, &abi.RequestDecision{Action: abi.ActionAllow}, func(c *Chain) (*abi.RequestDecision, error) { return c.request(ctx, in) })
}

// Message implements host.Policy.
func (m *Manager) Message(ctx context.Context, in *abi.MessageInput) (json.RawMessage, error) {
	return onCurrent(m, in.Message, func(c *Chain) (json.RawMessage, error) { return c.message(ctx, in) })
}

// Close stops watching, retires the current generation and waits for it to
// drain and close (or for ctx).
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.shut.Store(true)
	m.mu.Unlock()
	var errs []error
	if m.watcher != nil {
		close(m.stop)
		<-m.stopped
		errs = append(errs, m.watcher.Close())
	}
	if c := m.cur.Swap(nil); c != nil {
		errs = append(errs, c.Close(ctx))
	}
	return errors.Join(errs...)
}

// updateWatches watches the directories of the file sources of specs.
// Directories, not files: editors and build tools replace a file by
// renaming another over it, which ends a watch on the file itself.
func (m *Manager) updateWatches(specs []Spec) {
	if m.watcher == nil {
		return
	}
	files := map[string]bool{}
	dirs := map[string]bool{}
	for _, s := range specs {
		if strings.HasPrefix(s.Source, BuiltinPrefix) {
			continue
		}
		abs, err := filepath.Abs(s.Source)
		if err != nil {
			continue
		}
		files[abs] = true
		dirs[filepath.Dir(abs)] = true
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	for d := range dirs {
		if !m.dirs[d] {
			if err := m.watcher.Add(d); err != nil {
				m.log.Warn("cannot watch plugin directory", "dir", d, "error", err)
				continue
			}
		}
	}
	for d := range m.dirs {
		if !dirs[d] {
			_ = m.watcher.Remove(d)
		}
	}
	m.dirs, m.files = dirs, files
}

func (m *Manager) watching(path string) bool {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	return m.files[filepath.Clean(path)]
}

func (m *Manager) watch() {
	defer close(m.stopped)
	var timer *time.Timer
	var fire <-chan time.Time
	changed := map[string]bool{}
	for {
		select {
		case <-m.stop:
			if timer != nil {
				timer.Stop()
			}
			return
		case ev, ok := <-m.watcher.Events:
			if !ok {
				return
			}
			if !ev.Has(fsnotify.Write) && !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Rename) && !ev.Has(fsnotify.Remove) {
				continue
			}
			if !m.watching(ev.Name) {
				continue
			}
			changed[filepath.Clean(ev.Name)] = true
			if timer == nil {
				timer = time.NewTimer(m.opts.Debounce)
			} else {
				timer.Reset(m.opts.Debounce)
			}
			fire = timer.C
		case err, ok := <-m.watcher.Errors:
			if !ok {
				return
			}
			m.log.Warn("file watcher error", "error", err)
		case <-fire:
			fire = nil
			paths := make([]string, 0, len(changed))
			for p := range changed {
				paths = append(paths, p)
			}
			clear(changed)
			m.log.Info("plugin files changed; reloading", "paths", paths)
			specs := m.Specs()
			// A failure is logged by Reload with the plugin's path; the
			// old generation keeps serving until the next change.
			err := m.Reload(context.Background(), specs)
			if l := m.tell(); l != nil {
				l.WatchReloaded(err)
			}
		}
	}
}

// samePlugins reports whether two chains run the very same plugins in order.
func samePlugins(a, b *Chain) bool {
	if len(a.plugins) != len(b.plugins) {
		return false
	}
	for i := range a.plugins {
		if a.plugins[i] != b.plugins[i] {
			return false
		}
	}
	return true
}

// Plugin returns the current generation's plugin named name with a
// reference taken (give it back with Plugin.Release), or false. A tool
// server holds the version it serves this way: calls in flight finish on
// it while a newer one takes new calls.
func (m *Manager) Plugin(name string) (*Plugin, bool) {
	c := m.acquire()
	if c == nil {
		return nil, false
	}
	defer c.release()
	for _, p := range c.plugins {
		if p.spec.Name == name && p.retain() {
			return p, true
		}
	}
	return nil, false
}
