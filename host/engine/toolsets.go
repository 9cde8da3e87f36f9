package engine

import (
	"context"
	"errors"
	"time"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/host/toolset"
)

// ErrConfigToolset is returned (wrapped) for a change to a toolset of the
// config file, which the API does not change.
var ErrConfigToolset = errors.New("defined in the config file")

// ToolsetInfo is one toolset as the admin API shows it.
type ToolsetInfo struct {
	Name string `json:"name"`
	// Source is "config" (read-only through the API) or "store".
	Source string `json:"source"`
	config.ToolsetSpec
	// Version is a stored toolset's version (its ETag); 0 for the file's.
	Version int64     `json:"version,omitempty"`
	Created time.Time `json:"created,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
	// Problem says why a stored toolset is not applied (the file took its
	// name, or it no longer decodes).
	Problem string `json:"problem,omitempty"`
}

// toolsetKind serves the toolsets through namedKind (namedspecs.go).
var toolsetKind = namedKind[toolset.Toolset, config.ToolsetSpec, ToolsetInfo]{
	noun: "toolset", inConfig: ErrConfigToolset, none: store.ErrNoToolset,
	checkName:    toolset.CheckName,
	file:         func(f *config.File) []toolset.Toolset { return f.Host.Toolsets },
	name:         func(t toolset.Toolset) string { return t.Name },
	withDefaults: toolset.Toolset.WithDefaults,
	specOf:       config.ToolsetSpecOf,
	build:        config.ToolsetSpec.Toolset,
	decode:       config.DecodeToolsetSpec,
	info: func(n namedInfo, spec config.ToolsetSpec) ToolsetInfo {
		return ToolsetInfo{Name: n.Name, Source: n.Source, ToolsetSpec: spec, Version: n.Version, Created: n.Created, Updated: n.Updated, Problem: n.Problem}
	},
	store: namedTable{(*store.Store).Toolsets, (*store.Store).Toolset, (*store.Store).PutToolset, (*store.Store).DeleteToolset},
}

// Toolsets lists the config file's toolsets, then the store's, by name.
func (e *Engine) Toolsets(ctx context.Context) ([]ToolsetInfo, error) {
	return toolsetKind.list(ctx, e)
}

// Toolset returns one toolset, from the file or the store.
func (e *Engine) Toolset(ctx context.Context, name string) (ToolsetInfo, error) {
	return toolsetKind.get(ctx, e, name)
}

// PutToolset creates or replaces a stored toolset and applies it: its
// endpoint serves the new definition from the next request on, and its
// clients hear tools/list_changed. ifVersion, when not 0, must be the
// stored version (If-Match). The file's toolsets are
// read-only here.
func (e *Engine) PutToolset(ctx context.Context, name string, spec config.ToolsetSpec, ifVersion int64) (ToolsetInfo, bool, error) {
	return toolsetKind.put(ctx, e, name, spec, ifVersion)
}

// DeleteToolset removes a stored toolset; its endpoint answers 404 from
// then on, to its open sessions too; calls in flight finish.
func (e *Engine) DeleteToolset(ctx context.Context, name string, ifVersion int64) error {
	return toolsetKind.delete(ctx, e, name, ifVersion)
}
