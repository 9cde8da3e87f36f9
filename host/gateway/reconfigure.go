package gateway

import (
	"context"
	"reflect"
	"sync"

	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// Reconfigure applies a new configuration to a running host: servers
// removed from it are closed and their processes ended, new servers are
// started, changed servers are restarted, and a change of tool naming
// rebuilds the catalog. Unchanged servers keep their sessions and calls in
// flight. listen.auth and auth_token take effect at once (a key removed
// stops working); other listen settings only on restart. It waits, until ctx
// ends, for new servers to connect; an error means cfg was refused and
// nothing changed.
//
// swapPolicy, when not nil, swaps in the policies that go with cfg (built
// whole beforehand, such as plugins.Staged.Commit). It runs once the new
// server set is in place and before any new server starts, under the lock
// that call routing takes, so that no call sees the new servers with the
// old policies or the old servers with the new ones. It is not called when
// cfg is refused.
func (h *Host) Reconfigure(ctx context.Context, cfg Config, swapPolicy func()) error {
	waits, err := h.apply(cfg, swapPolicy)
	if err != nil {
		return err
	}
	// The new configuration has taken: new servers that are still
	// connecting when ctx ends go on in the background (status shows them).
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// Update is Reconfigure without the wait: new servers connect in the
// background (WaitConnecting waits for one).
func (h *Host) Update(cfg Config, swapPolicy func()) error {
	_, err := h.apply(cfg, swapPolicy)
	return err
}

// WaitConnecting waits until server has left the connecting state (it is
// connected, failed, or waits for a login), or ctx ends; a server the host
// does not have is not connecting.
func (h *Host) WaitConnecting(ctx context.Context, server string) {
	for {
		u := h.upstreamNamed(server)
		if u == nil {
			return
		}
		ch := u.Connecting()
		if ch == nil {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// apply puts cfg in place and starts the new servers, returning a channel
// per new server that closes when its first connect ends.
func (h *Host) apply(cfg Config, swapPolicy func()) ([]<-chan struct{}, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	authn, err := listener.NewAuthenticator(cfg.Listen, h.log.Named("auth"))
	if err != nil {
		return nil, err
	}
	h.upMu.Lock()
	if h.closed.Load() {
		h.upMu.Unlock()
		return nil, upstream.ErrClosed
	}
	var started, stopped []*upstream.Server
	next := make([]*upstream.Server, 0, len(cfg.Servers))
	byName := make(map[string]*upstream.Server, len(cfg.Servers))
	for _, sc := range cfg.Servers {
		u, ok := h.byName[sc.Name]
		if !ok || !upstream.Same(u.Config, sc) {
			if ok {
				stopped = append(stopped, u)
			}
			u = upstream.New(sc, h.log.Named(sc.Name), h)
			started = append(started, u)
		}
		next = append(next, u)
		byName[sc.Name] = u
	}
	for name, u := range h.byName {
		if _, ok := byName[name]; !ok {
			stopped = append(stopped, u)
		}
	}
	h.upstreams, h.byName = next, byName
	codeChanged := h.cfg.Tools.Exposure != cfg.Tools.Exposure || h.cfg.Code != cfg.Code
	toolsetsChanged := !reflect.DeepEqual(h.cfg.Toolsets, cfg.Toolsets)
	h.cfg.Servers, h.cfg.Tools, h.cfg.Resources, h.cfg.Quotas, h.cfg.Code, h.cfg.Toolsets = cfg.Servers, cfg.Tools, cfg.Resources, cfg.Quotas, cfg.Code, cfg.Toolsets
	exposed := h.exposeTools(cfg.Tools)
	// Counters of unchanged quotas carry over; calls in flight release
	// their slots into the counters they took them from.
	h.quotas.Store(h.newLimiter(cfg.Quotas, h.quotas.Load()))
	h.cfg.Listen.Auth, h.cfg.Listen.AuthToken = cfg.Listen.Auth, cfg.Listen.AuthToken
	h.authn.Store(authn) // keys and OAuth settings take effect now; sessions of identities no longer accepted get 401
	if swapPolicy != nil {
		swapPolicy()
	}
	h.upMu.Unlock()

	var wg sync.WaitGroup
	for _, u := range stopped {
		h.log.Info("upstream removed or changed; closing", "server", u.Config.Name)
		wg.Add(1)
		go func() { defer wg.Done(); u.Close() }()
	}
	wg.Wait()
	waits := make([]<-chan struct{}, len(started))
	for i, u := range started {
		waits[i] = u.Start()
	}
	if codeChanged {
		// Listings change with the catalog unchanged (codemode.go).
		h.views.clear(0)
		h.servers.toolsChanged()
	}
	h.ToolsChanged("") // removed servers' tools go, renamed tools are renamed
	if exposed {
		h.servers.toolsChanged() // every session's listing is another
	}
	h.FeaturesChanged("")
	if toolsetsChanged {
		h.servers.toolsChanged() // the toolsets' endpoints list other tools
	}
	return waits, nil
}
