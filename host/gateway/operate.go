package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// ErrUnknownServer is returned for an operation on a server the host does
// not have.
var ErrUnknownServer = errors.New("no such server")

// Disconnect closes a server's sessions (ending its process) and keeps it
// off: its tools leave the catalog and calls to it fail, until Reconnect or
// a reload that changes its definition. It is not remembered across
// restarts.
func (h *Host) Disconnect(name string) error {
	old, err := h.replaceUpstream(name, true)
	if err != nil {
		return err
	}
	h.log.Info("upstream disconnected by an operator", "server", name)
	old.Close()
	h.ToolsChanged(name)
	h.FeaturesChanged(name)
	return nil
}

// Reconnect ends a server's sessions and connects it again, whether it was
// connected, failing, or disconnected by Disconnect. It waits, until ctx
// ends, for the new connection; the error is the connect's, if it failed.
func (h *Host) Reconnect(ctx context.Context, name string) error {
	old, err := h.replaceUpstream(name, false)
	if err != nil {
		return err
	}
	h.log.Info("upstream reconnecting at an operator's request", "server", name)
	old.Close()
	nu := h.upstreamNamed(name)
	if nu == nil {
		return nil // removed meanwhile
	}
	done := nu.Start()
	h.ToolsChanged(name)
	h.FeaturesChanged(name)
	select {
	case <-done:
	case <-ctx.Done():
		return nil // still connecting; its status shows it
	}
	if st := nu.Status(); st.State == upstream.StateFailed {
		return errors.New(st.Error)
	}
	return nil
}

// replaceUpstream swaps a server's upstream for a fresh one of the same
// definition, held or not, and returns the old one for the caller to close
// outside the lock.
func (h *Host) replaceUpstream(name string, held bool) (*upstream.Server, error) {
	h.upMu.Lock()
	defer h.upMu.Unlock()
	if h.closed.Load() {
		return nil, upstream.ErrClosed
	}
	old, ok := h.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	nu := upstream.New(old.Config, old.Logger(), h)
	if held {
		nu = upstream.NewHeld(old.Config, old.Logger(), h)
	}
	// Readers hold on to the slice (upstreamList): a new one, never an
	// edit in place.
	next := make([]*upstream.Server, len(h.upstreams))
	for i, u := range h.upstreams {
		next[i] = u
		if u == old {
			next[i] = nu
		}
	}
	h.upstreams = next
	h.byName[name] = nu
	return old, nil
}

// Catalog is every upstream tool under its exposed name, before policies:
// what the policy chain is given to list.
func (h *Host) Catalog() []abi.Tool {
	return slices.Clone(h.cat.Load().Tools)
}
