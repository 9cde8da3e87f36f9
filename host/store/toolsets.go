package store

import (
	"context"
	"errors"
)

// ErrNoToolset is returned for a toolset the store does not have.
var ErrNoToolset = errors.New("no such toolset")

// Toolset is one toolset as stored: Spec is its JSON (config.ToolsetSpec).
type Toolset = NamedSpec

// toolsetTable holds the stored toolsets.
var toolsetTable = namedSpecs{table: "mcphost_toolsets", none: ErrNoToolset}

// Toolsets returns every stored toolset, by name. Toolsets hold no secrets.
func (s *Store) Toolsets(ctx context.Context) ([]Toolset, error) {
	return toolsetTable.list(ctx, s)
}

// Toolset returns one stored toolset, or ErrNoToolset.
func (s *Store) Toolset(ctx context.Context, name string) (Toolset, error) {
	return toolsetTable.get(ctx, s, name)
}

// PutToolset creates or replaces a toolset in one transaction that bumps the
// revision first (the write lock, as for servers). ifVersion, when not 0,
// must be the stored version: ErrVersion otherwise, also when there is
// none. created reports that there was none.
func (s *Store) PutToolset(ctx context.Context, name string, spec []byte, ifVersion int64) (_ Toolset, created bool, _ error) {
	return toolsetTable.put(ctx, s, name, spec, ifVersion)
}

// DeleteToolset removes a toolset; ifVersion as for PutToolset. Without
// ifVersion, a toolset that is not there is ErrNoToolset.
func (s *Store) DeleteToolset(ctx context.Context, name string, ifVersion int64) error {
	return toolsetTable.delete(ctx, s, name, ifVersion)
}
