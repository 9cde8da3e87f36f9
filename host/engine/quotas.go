package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/quota"
	"github.com/mcphost-project/mcphost/host/store"
)

// ErrConfigQuota is returned (wrapped) for a change to a quota of the
// config file, which the API does not change.
var ErrConfigQuota = errors.New("defined in the config file")

// QuotaInfo is one quota as the admin API shows it.
type QuotaInfo struct {
	Name string `json:"name"`
	// Source is "config" (read-only through the API) or "store".
	Source string `json:"source"`
	config.QuotaSpec
	// Version is a stored quota's version (its ETag); 0 for the file's.
	Version int64     `json:"version,omitempty"`
	Created time.Time `json:"created,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
	// Problem says why a stored quota is not applied (the file took its
	// name, or it no longer decodes).
	Problem string `json:"problem,omitempty"`
}

// Quotas lists the config file's quotas, then the store's, by name.
func (e *Engine) Quotas(ctx context.Context) ([]QuotaInfo, error) {
	file := e.File()
	out := make([]QuotaInfo, 0, len(file.Host.Quotas))
	for _, q := range file.Host.Quotas {
		out = append(out, QuotaInfo{Name: q.Name, Source: "config", QuotaSpec: config.QuotaSpecOf(q.WithDefaults())})
	}
	if e.store == nil {
		return out, nil
	}
	stored, err := e.store.Quotas(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the store: %w", err)
	}
	for _, sq := range stored {
		out = append(out, storedQuotaInfo(sq, file))
	}
	return out, nil
}

// Quota returns one quota, from the file or the store.
func (e *Engine) Quota(ctx context.Context, name string) (QuotaInfo, error) {
	file := e.File()
	if q, ok := configQuota(file, name); ok {
		return QuotaInfo{Name: q.Name, Source: "config", QuotaSpec: config.QuotaSpecOf(q.WithDefaults())}, nil
	}
	if e.store == nil {
		return QuotaInfo{}, noQuota(name)
	}
	sq, err := e.store.Quota(ctx, name)
	if errors.Is(err, store.ErrNoQuota) {
		return QuotaInfo{}, noQuota(name)
	}
	if err != nil {
		return QuotaInfo{}, err
	}
	return storedQuotaInfo(sq, file), nil
}

// PutQuota creates or replaces a stored quota and applies it: its
// counters start afresh when its definition changed. ifVersion, when not
// 0, must be the stored version (If-Match). The file's quotas are
// read-only here.
func (e *Engine) PutQuota(ctx context.Context, name string, spec config.QuotaSpec, ifVersion int64) (QuotaInfo, bool, error) {
	if e.store == nil {
		return QuotaInfo{}, false, ErrNoStore
	}
	if err := quota.CheckName(name); err != nil {
		return QuotaInfo{}, false, &config.SpecError{Errors: []config.FieldError{{Field: "name", Detail: err.Error()}}}
	}
	file := e.File()
	if _, ok := configQuota(file, name); ok {
		return QuotaInfo{}, false, configQuotaError(file, name)
	}
	q, err := spec.Quota(name)
	if err != nil {
		return QuotaInfo{}, false, err
	}
	b, err := json.Marshal(config.QuotaSpecOf(q))
	if err != nil {
		return QuotaInfo{}, false, err
	}
	saved, created, err := e.store.PutQuota(ctx, name, b, ifVersion)
	if err != nil {
		return QuotaInfo{}, false, err
	}
	e.syncAfterWrite(ctx, name)
	return storedQuotaInfo(saved, file), created, nil
}

// DeleteQuota removes a stored quota; calls in flight under it finish.
func (e *Engine) DeleteQuota(ctx context.Context, name string, ifVersion int64) error {
	if e.store == nil {
		return ErrNoStore
	}
	file := e.File()
	if _, ok := configQuota(file, name); ok {
		return configQuotaError(file, name)
	}
	if err := e.store.DeleteQuota(ctx, name, ifVersion); err != nil {
		if errors.Is(err, store.ErrNoQuota) {
			return noQuota(name)
		}
		return err
	}
	e.syncAfterWrite(ctx, name)
	return nil
}

// storedQuotas are the store's quotas the host applies, after the file's:
// those whose name the file does not take and that still decode.
func (e *Engine) storedQuotas(ctx context.Context, file *config.File) ([]quota.Quota, error) {
	stored, err := e.store.Quotas(ctx)
	if err != nil {
		return nil, err
	}
	var out []quota.Quota
	for _, sq := range stored {
		q, problem := decodeStoredQuota(sq, file)
		if problem != "" {
			e.log.Warn("a stored quota is not applied", "quota", sq.Name, "reason", problem)
			continue
		}
		out = append(out, q)
	}
	return out, nil
}

func decodeStoredQuota(sq store.Quota, file *config.File) (quota.Quota, string) {
	if _, taken := configQuota(file, sq.Name); taken {
		return quota.Quota{}, "the config file defines a quota of the same name"
	}
	spec, err := config.DecodeQuotaSpec(sq.Spec)
	if err == nil {
		var q quota.Quota
		if q, err = spec.Quota(sq.Name); err == nil {
			return q, ""
		}
	}
	return quota.Quota{}, "its definition is refused: " + err.Error()
}

func storedQuotaInfo(sq store.Quota, file *config.File) QuotaInfo {
	info := QuotaInfo{Name: sq.Name, Source: "store", Version: sq.Version, Created: sq.Created, Updated: sq.Updated}
	_ = json.Unmarshal(sq.Spec, &info.QuotaSpec) // what is stored, as it is, even when it is not applied
	_, info.Problem = decodeStoredQuota(sq, file)
	return info
}

func configQuota(file *config.File, name string) (quota.Quota, bool) {
	i := slices.IndexFunc(file.Host.Quotas, func(q quota.Quota) bool { return q.Name == name })
	if i < 0 {
		return quota.Quota{}, false
	}
	return file.Host.Quotas[i], true
}

func configQuotaError(file *config.File, name string) error {
	return fmt.Errorf("quota %q is %w (%s); change it there, or add a quota of another name", name, ErrConfigQuota, file.Path)
}

func noQuota(name string) error {
	return fmt.Errorf("%w: %q is neither in the config file nor in the store", store.ErrNoQuota, name)
}

// quotaWindows shares the windows of quotas through the store when the
// store is PostgreSQL, the one replicas share: every replica then counts
// every replica's calls per window. An SQLite store is one process's.
func (e *Engine) quotaWindows(file *config.File) quota.Windows {
	if e.store == nil || file.Store == nil || file.Store.Driver != store.Postgres {
		return nil
	}
	e.sharesWindows = true
	return storeWindows{e.store}
}

// storeWindows are quota.Windows in the store.
type storeWindows struct{ s *store.Store }

func (w storeWindows) Take(ctx context.Context, quota, key string, start, expires int64, limit int) (bool, error) {
	return w.s.TakeWindow(ctx, quota, key, start, expires, limit)
}

func (w storeWindows) GiveBack(ctx context.Context, quota, key string, start int64) error {
	return w.s.GiveBackWindow(ctx, quota, key, start)
}
