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
)

// namedKind is what the named definitions of one kind, quotas or
// toolsets, differ in: T is the host's value (quota.Quota), S its JSON
// spec (config.QuotaSpec) and I what the admin API shows (QuotaInfo).
// Both kinds come from the config file (read-only here) and from the
// store (which the API changes); the store's apply after the file's,
// unless the file takes their name.
type namedKind[T, S, I any] struct {
	noun     string // "quota", in messages and log keys
	inConfig error  // ErrConfigQuota: wrapped for a change to the file's
	none     error  // store.ErrNoQuota: wrapped for a name that is nowhere

	checkName    func(name string) error
	file         func(*config.File) []T
	name         func(T) string
	withDefaults func(T) T
	specOf       func(T) S
	build        func(S, string) (T, error) // checks a spec, as config.QuotaSpec.Quota
	decode       func([]byte) (S, error)
	info         func(namedInfo, S) I
	store        namedTable
}

// namedTable is the store's table of one kind, as its methods
// ((*store.Store).Quotas, ...).
type namedTable struct {
	list   func(*store.Store, context.Context) ([]store.NamedSpec, error)
	get    func(*store.Store, context.Context, string) (store.NamedSpec, error)
	put    func(*store.Store, context.Context, string, []byte, int64) (store.NamedSpec, bool, error)
	delete func(*store.Store, context.Context, string, int64) error
}

// namedInfo is what QuotaInfo and ToolsetInfo say besides the spec.
type namedInfo struct {
	Name, Source     string
	Version          int64
	Created, Updated time.Time
	Problem          string
}

// list lists the config file's definitions, then the store's, by name.
func (k namedKind[T, S, I]) list(ctx context.Context, e *Engine) ([]I, error) {
	file := e.File()
	out := make([]I, 0, len(k.file(file)))
	for _, t := range k.file(file) {
		out = append(out, k.configInfo(t))
	}
	if e.store == nil {
		return out, nil
	}
	stored, err := k.store.list(e.store, ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the store: %w", err)
	}
	for _, sn := range stored {
		out = append(out, k.storedInfo(sn, file))
	}
	return out, nil
}

// get returns one definition, from the file or the store.
func (k namedKind[T, S, I]) get(ctx context.Context, e *Engine, name string) (I, error) {
	var zero I
	file := e.File()
	if t, ok := k.inFile(file, name); ok {
		return k.configInfo(t), nil
	}
	if e.store == nil {
		return zero, k.notFound(name)
	}
	sn, err := k.store.get(e.store, ctx, name)
	if errors.Is(err, k.none) {
		return zero, k.notFound(name)
	}
	if err != nil {
		return zero, err
	}
	return k.storedInfo(sn, file), nil
}

// put creates or replaces a stored definition, after checking it, and
// applies it. ifVersion, when not 0, must be the stored version
// (If-Match). The file's definitions are read-only here.
func (k namedKind[T, S, I]) put(ctx context.Context, e *Engine, name string, spec S, ifVersion int64) (I, bool, error) {
	var zero I
	if e.store == nil {
		return zero, false, ErrNoStore
	}
	if err := k.checkName(name); err != nil {
		return zero, false, &config.SpecError{Errors: []config.FieldError{{Field: "name", Detail: err.Error()}}}
	}
	file := e.File()
	if _, ok := k.inFile(file, name); ok {
		return zero, false, k.configError(file, name)
	}
	t, err := k.build(spec, name)
	if err != nil {
		return zero, false, err
	}
	b, err := json.Marshal(k.specOf(t))
	if err != nil {
		return zero, false, err
	}
	saved, created, err := k.store.put(e.store, ctx, name, b, ifVersion)
	if err != nil {
		return zero, false, err
	}
	e.syncAfterWrite(ctx, name)
	return k.storedInfo(saved, file), created, nil
}

// delete removes a stored definition and applies that.
func (k namedKind[T, S, I]) delete(ctx context.Context, e *Engine, name string, ifVersion int64) error {
	if e.store == nil {
		return ErrNoStore
	}
	file := e.File()
	if _, ok := k.inFile(file, name); ok {
		return k.configError(file, name)
	}
	if err := k.store.delete(e.store, ctx, name, ifVersion); err != nil {
		if errors.Is(err, k.none) {
			return k.notFound(name)
		}
		return err
	}
	e.syncAfterWrite(ctx, name)
	return nil
}

// applied are the store's definitions the host applies, after the
// file's: those whose name the file does not take and that still decode.
func (k namedKind[T, S, I]) applied(ctx context.Context, e *Engine, file *config.File) ([]T, error) {
	stored, err := k.store.list(e.store, ctx)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, sn := range stored {
		t, problem := k.decodeStored(sn, file)
		if problem != "" {
			e.log.Warn("a stored "+k.noun+" is not applied", k.noun, sn.Name, "reason", problem)
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

func (k namedKind[T, S, I]) decodeStored(sn store.NamedSpec, file *config.File) (T, string) {
	var zero T
	if _, taken := k.inFile(file, sn.Name); taken {
		return zero, "the config file defines a " + k.noun + " of the same name"
	}
	spec, err := k.decode(sn.Spec)
	if err == nil {
		var t T
		if t, err = k.build(spec, sn.Name); err == nil {
			return t, ""
		}
	}
	return zero, "its definition is refused: " + err.Error()
}

func (k namedKind[T, S, I]) configInfo(t T) I {
	return k.info(namedInfo{Name: k.name(t), Source: "config"}, k.specOf(k.withDefaults(t)))
}

func (k namedKind[T, S, I]) storedInfo(sn store.NamedSpec, file *config.File) I {
	n := namedInfo{Name: sn.Name, Source: "store", Version: sn.Version, Created: sn.Created, Updated: sn.Updated}
	var spec S
	_ = json.Unmarshal(sn.Spec, &spec) // what is stored, as it is, even when it is not applied
	_, n.Problem = k.decodeStored(sn, file)
	return k.info(n, spec)
}

func (k namedKind[T, S, I]) inFile(file *config.File, name string) (T, bool) {
	list := k.file(file)
	i := slices.IndexFunc(list, func(t T) bool { return k.name(t) == name })
	if i < 0 {
		var zero T
		return zero, false
	}
	return list[i], true
}

func (k namedKind[T, S, I]) configError(file *config.File, name string) error {
	return fmt.Errorf("%s %q is %w (%s); change it there, or add a %s of another name", k.noun, name, k.inConfig, file.Path, k.noun)
}

func (k namedKind[T, S, I]) notFound(name string) error {
	return fmt.Errorf("%w: %q is neither in the config file nor in the store", k.none, name)
}
