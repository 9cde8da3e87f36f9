package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

// Toolsets lists the config file's toolsets, then the store's, by name.
func (e *Engine) Toolsets(ctx context.Context) ([]ToolsetInfo, error) {
	file := e.File()
	out := make([]ToolsetInfo, 0, len(file.Host.Toolsets))
	for _, t := range file.Host.Toolsets {
		out = append(out, ToolsetInfo{Name: t.Name, Source: "config", ToolsetSpec: config.ToolsetSpecOf(t.WithDefaults())})
	}
	if e.store == nil {
		return out, nil
	}
	stored, err := e.store.Toolsets(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the store: %w", err)
	}
	for _, st := range stored {
		out = append(out, storedToolsetInfo(st, file))
	}
	return out, nil
}

// Toolset returns one toolset, from the file or the store.
func (e *Engine) Toolset(ctx context.Context, name string) (ToolsetInfo, error) {
	file := e.File()
	if t, ok := configToolset(file, name); ok {
		return ToolsetInfo{Name: t.Name, Source: "config", ToolsetSpec: config.ToolsetSpecOf(t.WithDefaults())}, nil
	}
	if e.store == nil {
		return ToolsetInfo{}, noToolset(name)
	}
	st, err := e.store.Toolset(ctx, name)
	if errors.Is(err, store.ErrNoToolset) {
		return ToolsetInfo{}, noToolset(name)
	}
	if err != nil {
		return ToolsetInfo{}, err
	}
	return storedToolsetInfo(st, file), nil
}

// PutToolset creates or replaces a stored toolset and applies it: its
// endpoint serves the new definition from the next request on, and its
// clients hear tools/list_changed. ifVersion, when not 0, must be the
// stored version (If-Match). The file's toolsets are
// read-only here.
func (e *Engine) PutToolset(ctx context.Context, name string, spec config.ToolsetSpec, ifVersion int64) (ToolsetInfo, bool, error) {
	if e.store == nil {
		return ToolsetInfo{}, false, ErrNoStore
	}
	if err := toolset.CheckName(name); err != nil {
		return ToolsetInfo{}, false, &config.SpecError{Errors: []config.FieldError{{Field: "name", Detail: err.Error()}}}
	}
	file := e.File()
	if _, ok := configToolset(file, name); ok {
		return ToolsetInfo{}, false, configToolsetError(file, name)
	}
	t, err := spec.Toolset(name)
	if err != nil {
		return ToolsetInfo{}, false, err
	}
	b, err := json.Marshal(config.ToolsetSpecOf(t))
	if err != nil {
		return ToolsetInfo{}, false, err
	}
	saved, created, err := e.store.PutToolset(ctx, name, b, ifVersion)
	if err != nil {
		return ToolsetInfo{}, false, err
	}
	e.syncAfterWrite(ctx, name)
	return storedToolsetInfo(saved, file), created, nil
}

// DeleteToolset removes a stored toolset; its endpoint answers 404 from
// then on, to its open sessions too; calls in flight finish.
func (e *Engine) DeleteToolset(ctx context.Context, name string, ifVersion int64) error {
	if e.store == nil {
		return ErrNoStore
	}
	file := e.File()
	if _, ok := configToolset(file, name); ok {
		return configToolsetError(file, name)
	}
	if err := e.store.DeleteToolset(ctx, name, ifVersion); err != nil {
		if errors.Is(err, store.ErrNoToolset) {
			return noToolset(name)
		}
		return err
	}
	e.syncAfterWrite(ctx, name)
	return nil
}

// storedToolsets are the store's toolsets the host applies, after the file's:
// those whose name the file does not take and that still decode.
func (e *Engine) storedToolsets(ctx context.Context, file *config.File) ([]toolset.Toolset, error) {
	stored, err := e.store.Toolsets(ctx)
	if err != nil {
		return nil, err
	}
	var out []toolset.Toolset
	for _, st := range stored {
		t, problem := decodeStoredToolset(st, file)
		if problem != "" {
			e.log.Warn("a stored toolset is not applied", "toolset", st.Name, "reason", problem)
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

func decodeStoredToolset(st store.Toolset, file *config.File) (toolset.Toolset, string) {
	if _, taken := configToolset(file, st.Name); taken {
		return toolset.Toolset{}, "the config file defines a toolset of the same name"
	}
	spec, err := config.DecodeToolsetSpec(st.Spec)
	if err == nil {
		var t toolset.Toolset
		if t, err = spec.Toolset(st.Name); err == nil {
			return t, ""
		}
	}
	return toolset.Toolset{}, "its definition is refused: " + err.Error()
}

func storedToolsetInfo(st store.Toolset, file *config.File) ToolsetInfo {
	info := ToolsetInfo{Name: st.Name, Source: "store", Version: st.Version, Created: st.Created, Updated: st.Updated}
	_ = json.Unmarshal(st.Spec, &info.ToolsetSpec) // what is stored, as it is, even when it is not applied
	_, info.Problem = decodeStoredToolset(st, file)
	return info
}

func configToolset(file *config.File, name string) (toolset.Toolset, bool) {
	i := slices.IndexFunc(file.Host.Toolsets, func(t toolset.Toolset) bool { return t.Name == name })
	if i < 0 {
		return toolset.Toolset{}, false
	}
	return file.Host.Toolsets[i], true
}

func configToolsetError(file *config.File, name string) error {
	return fmt.Errorf("toolset %q is %w (%s); change it there, or add a toolset of another name", name, ErrConfigToolset, file.Path)
}

func noToolset(name string) error {
	return fmt.Errorf("%w: %q is neither in the config file nor in the store", store.ErrNoToolset, name)
}
