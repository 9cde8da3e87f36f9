package engine

import (
	"context"
	"errors"
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

// quotaKind serves the quotas through namedKind (namedspecs.go).
var quotaKind = namedKind[quota.Quota, config.QuotaSpec, QuotaInfo]{
	noun: "quota", inConfig: ErrConfigQuota, none: store.ErrNoQuota,
	checkName:    quota.CheckName,
	file:         func(f *config.File) []quota.Quota { return f.Host.Quotas },
	name:         func(q quota.Quota) string { return q.Name },
	withDefaults: quota.Quota.WithDefaults,
	specOf:       config.QuotaSpecOf,
	build:        config.QuotaSpec.Quota,
	decode:       config.DecodeQuotaSpec,
	info: func(n namedInfo, spec config.QuotaSpec) QuotaInfo {
		return QuotaInfo{Name: n.Name, Source: n.Source, QuotaSpec: spec, Version: n.Version, Created: n.Created, Updated: n.Updated, Problem: n.Problem}
	},
	store: namedTable{(*store.Store).Quotas, (*store.Store).Quota, (*store.Store).PutQuota, (*store.Store).DeleteQuota},
}

// Quotas lists the config file's quotas, then the store's, by name.
func (e *Engine) Quotas(ctx context.Context) ([]QuotaInfo, error) {
	return quotaKind.list(ctx, e)
}

// Quota returns one quota, from the file or the store.
func (e *Engine) Quota(ctx context.Context, name string) (QuotaInfo, error) {
	return quotaKind.get(ctx, e, name)
}

// PutQuota creates or replaces a stored quota and applies it: its
// counters start afresh when its definition changed. ifVersion, when not
// 0, must be the stored version (If-Match). The file's quotas are
// read-only here.
func (e *Engine) PutQuota(ctx context.Context, name string, spec config.QuotaSpec, ifVersion int64) (QuotaInfo, bool, error) {
	return quotaKind.put(ctx, e, name, spec, ifVersion)
}

// DeleteQuota removes a stored quota; calls in flight under it finish.
func (e *Engine) DeleteQuota(ctx context.Context, name string, ifVersion int64) error {
	return quotaKind.delete(ctx, e, name, ifVersion)
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
