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
type Quota struct {
	Name string
	Spec []byte
	// Version is the store revision that last wrote the quota: unique and
	// increasing, so it serves as an ETag.
	Version int64
	Created time.Time
	Updated time.Time
}

// Quotas returns every stored quota, by name. Quotas hold no secrets.
func (s *Store) Quotas(ctx context.Context) ([]Quota, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, spec, version, created, updated FROM mcphost_quotas ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Quota
	for rows.Next() {
		q, err := scanQuota(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// Quota returns one stored quota, or ErrNoQuota.
func (s *Store) Quota(ctx context.Context, name string) (Quota, error) {
	q, err := scanQuota(s.db.QueryRowContext(ctx, s.q(`SELECT name, spec, version, created, updated FROM mcphost_quotas WHERE name = ?`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return Quota{}, ErrNoQuota
	}
	return q, err
}

func scanQuota(r scanner) (Quota, error) {
	var q Quota
	var spec string
	var created, updated int64
	if err := r.Scan(&q.Name, &spec, &q.Version, &created, &updated); err != nil {
		return Quota{}, err
	}
	q.Spec = []byte(spec)
	q.Created, q.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return q, nil
}

// PutQuota creates or replaces a quota in one transaction that bumps the
// revision first (the write lock, as for servers). ifVersion, when not 0,
// must be the stored version: ErrVersion otherwise, also when there is
// none. created reports that there was none.
func (s *Store) PutQuota(ctx context.Context, name string, spec []byte, ifVersion int64) (_ Quota, created bool, _ error) {
	var out Quota
	err := s.writeQuota(ctx, name, ifVersion, func(tx *sql.Tx, cur *Quota, rev int64) error {
		now := time.Now().UTC().Truncate(time.Millisecond)
		out = Quota{Name: name, Spec: spec, Version: rev, Created: now, Updated: now}
		if cur == nil {
			created = true
			_, err := tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_quotas (name, spec, version, created, updated) VALUES (?, ?, ?, ?, ?)`),
				name, string(spec), rev, now.UnixMilli(), now.UnixMilli())
			return err
		}
		out.Created = cur.Created
		_, err := tx.ExecContext(ctx, s.q(`UPDATE mcphost_quotas SET spec = ?, version = ?, updated = ? WHERE name = ?`),
			string(spec), rev, now.UnixMilli(), name)
		return err
	})
	if err != nil {
		return Quota{}, false, err
	}
	return out, created, nil
}

// DeleteQuota removes a quota; ifVersion as for PutQuota. Without
// ifVersion, a quota that is not there is ErrNoQuota.
func (s *Store) DeleteQuota(ctx context.Context, name string, ifVersion int64) error {
	return s.writeQuota(ctx, name, ifVersion, func(tx *sql.Tx, cur *Quota, _ int64) error {
		if cur == nil {
			return ErrNoQuota
		}
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM mcphost_quotas WHERE name = ?`), name)
		return err
	})
}

func (s *Store) writeQuota(ctx context.Context, name string, ifVersion int64, change func(tx *sql.Tx, cur *Quota, rev int64) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `UPDATE mcphost_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision`).Scan(&rev); err != nil {
		return err
	}
	var cur *Quota
	got, err := scanQuota(tx.QueryRowContext(ctx, s.q(`SELECT name, spec, version, created, updated FROM mcphost_quotas WHERE name = ?`), name))
	switch {
	case err == nil:
		cur = &got
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if ifVersion != 0 && (cur == nil || cur.Version != ifVersion) {
		return ErrVersion
	}
	if err := change(tx, cur, rev); err != nil {
		return err
	}
	return tx.Commit()
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
