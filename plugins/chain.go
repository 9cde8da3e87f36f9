package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
)

// Chain is one generation of plugins, run in order. It implements
// host.Policy: each plugin's failures are handled by its on_error mode
// ("deny" fails closed, "skip" skips the plugin with a warning).
//
// A Chain is safe for concurrent use. Plugins that a Manager carries over
// unchanged from one generation to the next are shared, not reloaded.
type Chain struct {
	rt      *Runtime
	plugins []*Plugin
	gen     uint64
	log     hclog.Logger

	refs     atomic.Int64 // the owner's reference plus calls in flight
	retired  atomic.Bool
	closed   chan struct{} // closed once the plugins are released
	closeErr error
}

// NewChain loads every spec (in parallel) into a new generation. If any
// fails, the ones loaded are closed and the error names the failing spec.
func (rt *Runtime) NewChain(ctx context.Context, specs []Spec) (*Chain, error) {
	return rt.newChain(ctx, specs, nil)
}

// newChain builds a chain, reusing prev's plugins whose spec and module
// content are unchanged.
func (rt *Runtime) newChain(ctx context.Context, specs []Spec, prev *Chain) (*Chain, error) {
	seen := map[string]bool{}
	for i, s := range specs {
		if s.Name == "" {
			return nil, &LoadError{Name: fmt.Sprintf("#%d", i), Source: s.Source, Err: fmt.Errorf("%w: name is empty", ErrSpec)}
		}
		if seen[s.Name] {
			return nil, &LoadError{Name: s.Name, Source: s.Source, Err: fmt.Errorf("%w: duplicate plugin name", ErrSpec)}
		}
		seen[s.Name] = true
	}
	c := &Chain{rt: rt, plugins: make([]*Plugin, len(specs)), log: rt.log, closed: make(chan struct{})}
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	withDefaults := make([]Spec, len(specs))
	for i, s := range specs {
		withDefaults[i] = s.WithDefaults()
	}
	grouped := map[int]bool{}
	for _, g := range rt.fuseGroups(withDefaults) {
		gs := make([]Spec, len(g))
		for j, i := range g {
			gs[j], grouped[i] = withDefaults[i], true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps, es := rt.loadGroup(ctx, gs, prev)
			for j, i := range g {
				errs[i] = es[j]
				if ps != nil {
					c.plugins[i] = ps[j]
				}
			}
		}()
	}
	for i, s := range specs {
		if grouped[i] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.plugins[i], errs[i] = rt.loadReusing(ctx, s.WithDefaults(), prev)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, p := range c.plugins {
			if p != nil {
				_ = p.releaseRef(context.WithoutCancel(ctx))
			}
		}
		return nil, err
	}
	c.gen = rt.nextGeneration()
	c.refs.Store(1)
	return c, nil
}

func (rt *Runtime) loadReusing(ctx context.Context, spec Spec, prev *Chain) (*Plugin, error) {
	wrap := func(err error) error { return &LoadError{Name: spec.Name, Source: spec.Source, Err: err} }
	if err := spec.Validate(); err != nil {
		return nil, wrap(err)
	}
	src, err := rt.resolve(spec)
	if err != nil {
		return nil, wrap(err)
	}
	if prev != nil {
		for _, p := range prev.plugins {
			if p.src.sha == src.sha && reflect.DeepEqual(p.spec, spec) &&
				reflect.DeepEqual(p.src.config, src.config) && p.retain() {
				return p, nil
			}
		}
	}
	p, err := rt.loadSource(ctx, spec, src)
	if err != nil {
		return nil, wrap(err)
	}
	if err := p.misplacedTool(); err != nil {
		_ = p.Close(ctx)
		return nil, wrap(err)
	}
	return p, nil
}

// misplacedTool refuses a tool plugin given as a policy (a plugin block):
// it would load, run no hook and serve no tool.
func (p *Plugin) misplacedTool() error {
	if p.spec.Kind != KindPolicy || len(p.desc.Hooks) > 0 ||
		!slices.Contains(p.export, abi.ExportTools) || !slices.Contains(p.export, abi.ExportToolInvoke) {
		return nil
	}
	return fmt.Errorf("%w: the module is a tool plugin (it exports %s and %s, and names no policy hook): put it in a tools_plugin block, not a plugin block", ErrSpec, abi.ExportTools, abi.ExportToolInvoke)
}

// Wants reports whether any plugin of the chain implements hook.
func (c *Chain) Wants(hook string) bool {
	for _, p := range c.plugins {
		if p.HasHook(hook) {
			return true
		}
	}
	return false
}

// Generation returns the chain's number; a newer chain has a larger one.
func (c *Chain) Generation() uint64 { return c.gen }

// Plugins returns the chain's plugins in order.
func (c *Chain) Plugins() []*Plugin { return append([]*Plugin(nil), c.plugins...) }

// Status returns the status of every plugin, in order.
func (c *Chain) Status() []Status {
	st := make([]Status, len(c.plugins))
	for i, p := range c.plugins {
		st[i] = p.Status()
	}
	return st
}

// Close gives up the owner's reference and waits until the calls in flight
// have finished and the plugins are released (or ctx is done). Calling it
// more than once is harmless.
func (c *Chain) Close(ctx context.Context) error {
	c.retire()
	select {
	case <-c.closed:
		return c.closeErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retire drops the owner's reference once; the chain closes when drained.
func (c *Chain) retire() {
	if c.retired.CompareAndSwap(false, true) {
		c.release()
	}
}

// Done is closed once the chain has been retired, drained and released.
func (c *Chain) Done() <-chan struct{} { return c.closed }

// acquire takes a reference for one call; false if the chain is closing.
func (c *Chain) acquire() bool {
	for {
		n := c.refs.Load()
		if n <= 0 {
			return false
		}
		if c.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// held runs fn holding a reference for one call; ErrClosed if the chain
// is closing.
func held[T any](c *Chain, fn func() (T, error)) (T, error) {
	if !c.acquire() {
		var zero T
		return zero, ErrClosed
	}
	defer c.release()
	return fn()
}

// release drops a reference; the last one releases the plugins, off the
// caller's path.
func (c *Chain) release() {
	if c.refs.Add(-1) != 0 {
		return
	}
	go func() {
		var errs []error
		for _, p := range c.plugins {
			errs = append(errs, p.releaseRef(context.Background()))
		}
		c.closeErr = errors.Join(errs...)
		close(c.closed)
	}()
}

// failure applies p's on_error mode to err: it returns the error to fail
// closed with, or nil after logging a warning when the plugin is skipped.
func (c *Chain) failure(p *Plugin, hook string, err error) error {
	if errors.Is(err, ErrInvalidOutput) {
		p.noteFailure(err)
	}
	args := []any{"hook", hook, "error", err}
	var te *TrapError
	if errors.As(err, &te) && te.Stderr != "" {
		args = append(args, "stderr", te.Stderr)
	}
	// The full error (an engine's stack trace, guest stderr) is for
	// debugging; the warning says what happened in one line.
	pe := &PolicyError{Plugin: p.spec.Name, Hook: hook, Err: err}
	p.log.Debug("plugin failure in full", args...)
	if p.spec.OnError == OnErrorSkip {
		p.log.Warn("plugin failed; skipped", "hook", hook, "error", pe.ClientMessage())
		return nil
	}
	p.log.Error("plugin failed; failing closed", "hook", hook, "error", pe.ClientMessage())
	return pe
}

// ToolsList runs every tools_list hook in order, each on the previous
// output. A plugin scoped to servers is given only their tools, and its
// output replaces them where the first of them stood.
func (c *Chain) ToolsList(ctx context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	return held(c, func() ([]abi.Tool, error) { return c.toolsList(ctx, in) })
}

func (c *Chain) toolsList(ctx context.Context, in *abi.ToolsListInput) ([]abi.Tool, error) {
	return c.toolsListSteps(ctx, in, listDecisions(decision.Recorder(ctx)))
}

// toolsListSteps is toolsList; step, when not nil, is told what each
// plugin that ran made of the list (decisions.go, ExplainTools).
func (c *Chain) toolsListSteps(ctx context.Context, in *abi.ToolsListInput, step func(p *Plugin, before, after []abi.Tool)) ([]abi.Tool, error) {
	tools := in.Tools
	for _, p := range c.plugins {
		if !p.HasHook(abi.HookToolsList) || !p.ForCaller(&in.Caller) {
			continue
		}
		next, err := c.toolsListOne(ctx, p, in.Caller, tools)
		if err != nil {
			if err = c.failure(p, abi.HookToolsList, err); err != nil {
				return nil, err
			}
			continue
		}
		if step != nil {
			step(p, tools, next)
		}
		tools = next
	}
	if tools == nil {
		tools = []abi.Tool{}
	}
	return tools, nil
}

func (c *Chain) toolsListOne(ctx context.Context, p *Plugin, caller abi.Caller, tools []abi.Tool) ([]abi.Tool, error) {
	scoped := len(p.spec.Servers) > 0
	sub := tools
	var reserved map[string]bool
	first := -1
	if scoped {
		sub = make([]abi.Tool, 0, len(tools))
		reserved = map[string]bool{}
		for i, t := range tools {
			if p.InScope(t.Server) {
				if first < 0 {
					first = i
				}
				sub = append(sub, t)
			} else {
				reserved[t.Name] = true
			}
		}
		if len(sub) == 0 {
			return tools, nil
		}
	}
	call := func(sub []abi.Tool) ([]abi.Tool, error) {
		input, err := json.Marshal(abi.ToolsListInput{Caller: caller, Tools: nonNil(sub)})
		if err != nil {
			return nil, err
		}
		out, err := p.Call(ctx, abi.HookToolsList, input)
		if err != nil {
			return nil, err
		}
		got, err := decodeToolsList(out, sub, reserved)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.spec.Name, err)
		}
		return got, nil
	}
	var got []abi.Tool
	var err error
	if p.memo != nil && p.memo.hints.ListPerTool {
		var called bool
		got, called, err = p.memo.toolsList(call, caller, sub, reserved)
		if err == nil && !called {
			p.reused()
		}
	} else {
		got, err = call(sub)
	}
	if err != nil {
		return nil, err
	}
	if !scoped {
		return got, nil
	}
	merged := make([]abi.Tool, 0, len(tools)-len(sub)+len(got))
	for i, t := range tools {
		if i == first {
			merged = append(merged, got...)
		}
		if !p.InScope(t.Server) {
			merged = append(merged, t)
		}
	}
	return merged, nil
}

func nonNil(t []abi.Tool) []abi.Tool {
	if t == nil {
		return []abi.Tool{}
	}
	return t
}

// ToolCall runs the tool_call hooks of the plugins in scope of the call's
// server, in order: the first deny ends the chain, rewrites compose (the
// next plugin sees the rewritten arguments), and respond answers the call
// without the upstream. A plugin failing with on_error "deny" denies the
// call, with a reason naming the plugin and the cause.
func (c *Chain) ToolCall(ctx context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	return held(c, func() (*abi.CallDecision, error) { return c.toolCall(ctx, in) })
}

func (c *Chain) toolCall(ctx context.Context, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	record := decision.Recorder(ctx) // told what each plugin that ran decided (decisions.go)
	cur := *in
	rewritten := false
	for _, p := range c.plugins {
		if !p.HasHook(abi.HookToolCall) || !p.InScope(in.Server) || !p.ForCaller(&in.Caller) {
			continue
		}
		d, err := c.toolCallOne(ctx, p, &cur)
		if err != nil {
			failed := err
			if err = c.failure(p, abi.HookToolCall, err); err != nil {
				reason := err.(*PolicyError).ClientMessage()
				if record != nil {
					record(failedDecision(p, abi.HookToolCall, decision.Deny, reason, failed))
				}
				return &abi.CallDecision{Action: abi.ActionDeny, Reason: reason}, nil
			}
			if record != nil {
				record(failedDecision(p, abi.HookToolCall, decision.Skipped, "", failed))
			}
			continue
		}
		if record != nil {
			record(callDecision(p, cur.Arguments, d))
		}
		switch d.Action {
		case abi.ActionDeny:
			// A copy: d may be a remembered decision (memo).
			deny := *d
			if deny.Reason == "" {
				deny.Reason = fmt.Sprintf("denied by policy %q", p.spec.Name)
			} else {
				deny.Reason = fmt.Sprintf("policy %q: %s", p.spec.Name, deny.Reason)
			}
			return &deny, nil
		case abi.ActionRespond:
			return d, nil
		case abi.ActionRewrite:
			cur.Arguments = d.Arguments
			rewritten = true
		}
	}
	if rewritten {
		return &abi.CallDecision{Action: abi.ActionRewrite, Arguments: cur.Arguments}, nil
	}
	return &abi.CallDecision{Action: abi.ActionAllow}, nil
}

func (c *Chain) toolCallOne(ctx context.Context, p *Plugin, in *abi.ToolCallInput) (*abi.CallDecision, error) {
	var key string
	reuse := false
	if p.memo != nil {
		var err error
		if key, reuse, err = p.memo.callKey(in); err != nil {
			return nil, err
		}
		if reuse {
			if d, ok := p.memo.decision(key); ok {
				p.reused()
				return d, nil
			}
		}
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out, err := p.Call(ctx, abi.HookToolCall, input)
	if err != nil {
		return nil, err
	}
	d, err := decodeCallDecision(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.spec.Name, err)
	}
	if reuse {
		p.memo.remember(key, d)
	}
	return d, nil
}

// ToolResult runs the tool_result hooks of the plugins in scope, in order,
// each on the previous result. A failing plugin with on_error "deny" fails
// the call with an error. It never modifies in.Result, and returns it
// itself when every plugin left it as it was (skipped by its hints or
// answered {"unchanged":true}): a result a guest changed is decoded into
// a new value (host.Policy asks this).
func (c *Chain) ToolResult(ctx context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	return held(c, func() (*abi.CallToolResult, error) { return c.toolResult(ctx, in) })
}

func (c *Chain) toolResult(ctx context.Context, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	record := decision.Recorder(ctx) // told what each plugin that ran did to the result (decisions.go)
	cur := *in
	for _, p := range c.plugins {
		if !p.HasHook(abi.HookToolResult) || !p.InScope(in.Server) || !p.ForCaller(&in.Caller) {
			continue
		}
		r, err := c.toolResultOne(ctx, p, &cur)
		if err != nil {
			failed := err
			if err = c.failure(p, abi.HookToolResult, err); err != nil {
				if record != nil {
					record(failedDecision(p, abi.HookToolResult, decision.Deny, err.(*PolicyError).ClientMessage(), failed))
				}
				return nil, err
			}
			if record != nil {
				record(failedDecision(p, abi.HookToolResult, decision.Skipped, "", failed))
			}
			continue
		}
		if record != nil {
			record(resultDecision(p, cur.Result, r))
		}
		cur.Result = r
	}
	return cur.Result, nil
}

func (c *Chain) toolResultOne(ctx context.Context, p *Plugin, in *abi.ToolResultInput) (*abi.CallToolResult, error) {
	if p.hints != nil && resultUnchanged(p.hints, in.Result) {
		p.reused()
		return in.Result, nil
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	// The input is longer than the result's encoding, so a result it
	// covers is certainly below the plugin's promise.
	if p.hints != nil && len(input) < p.hints.ResultMinBytes {
		p.reused()
		return in.Result, nil
	}
	out, err := p.Call(ctx, abi.HookToolResult, input)
	if err != nil {
		return nil, err
	}
	r, err := decodeToolResult(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.spec.Name, err)
	}
	if r == nil { // unchanged
		return in.Result, nil
	}
	return r, nil
}
