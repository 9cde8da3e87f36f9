package plugins

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/plugins/internal/extismhost"
)

// Built-ins of one chain share a pool of instances (a "group"): every
// built-in comes from the one module, and an instance of it holds a
// configured policy per plugin of the group (the guest keys them by
// SlotKey, whose value is the plugin's name). Each plugin of the group
// stays a Plugin of its own, with its describe, hints, memo, statistics,
// crash-loop state, on_error and logger; only get, put and discard go to
// the group's pool, and each call switches the instance's kernel to the
// calling plugin's environment (its configuration, slot included, and its
// logger). An instance that crashes is thrown away and counted against
// the plugin whose call crashed it, as before; its replacement configures
// each policy again at that policy's next call.
//
// A reload keeps every plugin whose spec and configuration are unchanged,
// with its pool, its Load number and its statistics, as for any plugin;
// the plugins it loads afresh (a hot swap of one built-in, say) share a new
// pool, off to the side like any reload, while the old generation serves
// the calls in flight. The old pool closes when its last plugin does.

// Keys of the built-in module's configuration (filters/policies, the
// guest's code, which the host does not import; TestFusedKeys holds them
// equal).
const (
	slotKey  = "mcphost.builtin.slot" // policies.SlotKey
	poolSlot = "-"                    // policies.PoolSlot
)

// fusable reports whether s can share a pool with other built-ins: a
// policy from the built-in module with no grant of its own (filesystem,
// network, environment or tool host functions), which would be the
// instance's, not the call's.
func (rt *Runtime) fusable(s Spec) bool {
	return fusesBuiltins && !rt.separateBuiltins && strings.HasPrefix(s.Source, BuiltinPrefix) &&
		s.Kind == KindPolicy && len(s.AllowedHosts) == 0 && len(s.AllowedPaths) == 0 &&
		len(s.Env) == 0 && !s.KV && !s.Progress && !s.ClientLog && s.Validate() == nil
}

// fuseGroups returns the indexes of specs (with defaults) that load as
// groups: the fusable built-ins, by memory cap (one cap per instance),
// groups of at least two.
func (rt *Runtime) fuseGroups(specs []Spec) [][]int {
	byMem := map[uint64][]int{}
	var order []uint64
	for i, s := range specs {
		if !rt.fusable(s) {
			continue
		}
		if _, ok := byMem[s.Memory]; !ok {
			order = append(order, s.Memory)
		}
		byMem[s.Memory] = append(byMem[s.Memory], i)
	}
	var groups [][]int
	for _, m := range order {
		if len(byMem[m]) >= 2 {
			groups = append(groups, byMem[m])
		}
	}
	return groups
}

// loadGroup loads specs (with defaults, fusable, same memory cap) as one
// group: it reuses prev's plugins that are unchanged, and loads the others
// into one new pool. errs holds
// a *LoadError per spec that failed; on any error the plugins loaded are
// released and none is returned.
func (rt *Runtime) loadGroup(ctx context.Context, specs []Spec, prev *Chain) (ps []*Plugin, errs []error) {
	errs = make([]error, len(specs))
	srcs := make([]source, len(specs))
	failed := false
	for i, s := range specs {
		src, err := rt.resolve(s)
		if err == nil && i > 0 && src.sha != srcs[0].sha {
			err = fmt.Errorf("%w: the built-in module changed while the chain loaded", ErrSource)
		}
		if err != nil {
			errs[i], failed = &LoadError{Name: s.Name, Source: s.Source, Err: err}, true
			continue
		}
		src.config[slotKey] = s.Name
		srcs[i] = src
	}
	if failed {
		return nil, errs
	}
	ps = make([]*Plugin, len(specs))
	var fresh []int // the specs not reused from prev
	for i := range specs {
		if ps[i] = prev.reusable(specs[i], srcs[i]); ps[i] == nil {
			fresh = append(fresh, i)
		}
	}
	if len(fresh) == 0 {
		return ps, errs
	}
	freshSpecs := make([]Spec, len(fresh))
	for j, i := range fresh {
		freshSpecs[j] = specs[i]
	}
	pool, err := rt.newPool(ctx, freshSpecs, srcs[fresh[0]])
	if err != nil {
		for _, i := range fresh {
			errs[i], failed = &LoadError{Name: specs[i].Name, Source: specs[i].Source, Err: err}, true
		}
	} else {
		// One after the other: they describe on the same warm instance.
		for _, i := range fresh {
			s := specs[i]
			if !pool.retain() {
				errs[i], failed = &LoadError{Name: s.Name, Source: s.Source, Err: fmt.Errorf("%w: the group's pool", ErrClosed)}, true
				continue
			}
			p, err := rt.loadSourceIn(ctx, s, srcs[i], pool)
			if err != nil {
				_ = pool.releaseRef(ctx)
				errs[i], failed = &LoadError{Name: s.Name, Source: s.Source, Err: err}, true
				continue
			}
			ps[i] = p
		}
		_ = pool.releaseRef(context.WithoutCancel(ctx)) // the loader's reference
	}
	if failed {
		for _, p := range ps {
			if p != nil {
				_ = p.releaseRef(context.WithoutCancel(ctx))
			}
		}
		return nil, errs
	}
	return ps, errs
}

// reusable returns c's plugin of the same spec, module and configuration,
// retained; nil if none (or c is nil). A plugin of a group keeps the
// group's pool.
func (c *Chain) reusable(spec Spec, src source) *Plugin {
	if c == nil {
		return nil
	}
	for _, p := range c.plugins {
		if p.src.sha == src.sha && reflect.DeepEqual(p.spec, spec) &&
			reflect.DeepEqual(p.src.config, src.config) && p.retain() {
			return p
		}
	}
	return nil
}

// newPool returns the pool of a group: a Plugin that serves no call of its
// own, whose instances the group's plugins take and give back. It makes
// instances lazily, up to the sum of the plugins' instances (so that no
// call waits for an instance where it did not when each had its own pool),
// warms them with a describe under the pool's own slot, and is swept when
// idle like any plugin. It closes when its last plugin does.
func (rt *Runtime) newPool(ctx context.Context, specs []Spec, src source) (*Plugin, error) {
	names := make([]string, len(specs))
	spec := Spec{Name: "", Source: specs[0].Source, Memory: specs[0].Memory, Timeout: specs[0].Timeout}
	for i, s := range specs {
		names[i] = s.Name
		spec.Instances += s.Instances
		spec.ListTimeout = max(spec.ListTimeout, s.ListTimeout)
		spec.MaxOutputBytes = max(spec.MaxOutputBytes, s.MaxOutputBytes)
	}
	spec.Name = "builtins(" + strings.Join(names, ",") + ")"
	mod, err := rt.acquire(ctx, src.wasm, src.sha)
	if err != nil {
		return nil, err
	}
	log := rt.log.Named(spec.Name)
	p := &Plugin{
		rt:     rt,
		spec:   spec,
		src:    source{sha: src.sha, config: map[string]string{slotKey: poolSlot, abi.ConfigABI: abi.Version}},
		mod:    mod,
		log:    log,
		modCfg: defaultModuleConfig(),
		sem:    make(chan struct{}, spec.Instances),
		idle:   make(chan *instance, spec.Instances),
		done:   make(chan struct{}),
		stats:  Status{Name: spec.Name, Source: spec.Source, SHA256: src.sha, State: StateLoaded},
	}
	p.env = &extismhost.Env{Config: p.src.config, Log: log, LogLevel: rt.guestLevel}
	p.refs.Store(1)
	if !rt.register(p) {
		_ = p.Close(ctx)
		return nil, fmt.Errorf("%w: the runtime was halted", ErrClosed)
	}
	return p, nil
}
