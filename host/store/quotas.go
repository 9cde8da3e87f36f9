package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ErrNoQuota is returned for a quota the store does not have.
var ErrNoQuota = errors.New("no such quota")

// Quota is one quota as stored: Spec is its JSON (config.QuotaSpec).
type Quota = NamedSpec

// quotaTable holds the stored quotas.
var quotaTable = namedSpecs{table: "mcphost_quotas", none: ErrNoQuota}

// Quotas returns every stored quota, by name. Quotas hold no secrets.
func (s *Store) Quotas(ctx context.Context) ([]Quota, error) {
	return quotaTable.list(ctx, s)
}

// Quota returns one stored quota, or ErrNoQuota.
func (s *Store) Quota(ctx context.Context, name string) (Quota, error) {
	return quotaTable.get(ctx, s, name)
}

// PutQuota creates or replaces a quota in one transaction that bumps the
// revision first (the write lock, as for servers). ifVersion, when not 0,
// must be the stored version: ErrVersion otherwise, also when there is
// none. created reports that there was none.
func (s *Store) PutQuota(ctx context.Context, name string, spec []byte, ifVersion int64) (_ Quota, created bool, _ error) {
	return quotaTable.put(ctx, s, name, spec, ifVersion)
}

// DeleteQuota removes a quota; ifVersion as for PutQuota. Without
// ifVersion, a quota that is not there is ErrNoQuota.
func (s *Store) DeleteQuota(ctx context.Context, name string, ifVersion int64) error {
	return quotaTable.delete(ctx, s, name, ifVersion)
}

// TakeWindow counts one call in a quota's window (quota.Windows): the
// row is created at 1, or raised by one while it is below limit, in one
// statement, so replicas racing for the last call cannot both get it. ok
// is false when the window is full.
func (s *Store) TakeWindow(ctx context.Context, quota, key string, start, expires int64, limit int) (ok bool, _ error) {
	var calls int64
	err := s.db.QueryRowContext(ctx, s.q(`INSERT INTO mcphost_quota_windows (quota, k, win, calls, expires) VALUES (?, ?, ?, 1, ?)
ON CONFLICT (quota, k, win) DO UPDATE SET calls = mcphost_quota_windows.calls + 1 WHERE mcphost_quota_windows.calls < ?
RETURNING calls`), quota, key, start, expires, limit).Scan(&calls)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// GiveBackWindow takes one call back out of a quota's window.
func (s *Store) GiveBackWindow(ctx context.Context, quota, key string, start int64) error {
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE mcphost_quota_windows SET calls = calls - 1 WHERE quota = ? AND k = ? AND win = ? AND calls > 0`), quota, key, start)
	return err
}

// PruneWindows forgets the quota windows that ended before now.
func (s *Store) PruneWindows(ctx context.Context, now time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM mcphost_quota_windows WHERE expires < ?`), now.UnixNano())
	return err
}
