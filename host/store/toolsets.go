package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ErrNoToolset is returned for a toolset the store does not have.
var ErrNoToolset = errors.New("no such toolset")

// Toolset is one toolset as stored: Spec is its JSON (config.ToolsetSpec).
type Toolset struct {
	Name string
	Spec []byte
	// Version is the store revision that last wrote the toolset: unique and
	// increasing, so it serves as an ETag.
	Version int64
	Created time.Time
	Updated time.Time
}

// Toolsets returns every stored toolset, by name. Toolsets hold no secrets.
func (s *Store) Toolsets(ctx context.Context) ([]Toolset, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, spec, version, created, updated FROM mcphost_toolsets ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Toolset
	for rows.Next() {
		t, err := scanToolset(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Toolset returns one stored toolset, or ErrNoToolset.
func (s *Store) Toolset(ctx context.Context, name string) (Toolset, error) {
	t, err := scanToolset(s.db.QueryRowContext(ctx, s.q(`SELECT name, spec, version, created, updated FROM mcphost_toolsets WHERE name = ?`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return Toolset{}, ErrNoToolset
	}
	return t, err
}

func scanToolset(r scanner) (Toolset, error) {
	var t Toolset
	var spec string
	var created, updated int64
	if err := r.Scan(&t.Name, &spec, &t.Version, &created, &updated); err != nil {
		return Toolset{}, err
	}
	t.Spec = []byte(spec)
	t.Created, t.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return t, nil
}

// PutToolset creates or replaces a toolset in one transaction that bumps the
// revision first (the write lock, as for servers and quotas).
// ifVersion, when not 0, must be the stored version: ErrVersion otherwise,
// also when there is none. created reports that there was none.
func (s *Store) PutToolset(ctx context.Context, name string, spec []byte, ifVersion int64) (_ Toolset, created bool, _ error) {
	var out Toolset
	err := s.writeToolset(ctx, name, ifVersion, func(tx *sql.Tx, cur *Toolset, rev int64) error {
		now := time.Now().UTC().Truncate(time.Millisecond)
		out = Toolset{Name: name, Spec: spec, Version: rev, Created: now, Updated: now}
		if cur == nil {
			created = true
			_, err := tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_toolsets (name, spec, version, created, updated) VALUES (?, ?, ?, ?, ?)`),
				name, string(spec), rev, now.UnixMilli(), now.UnixMilli())
			return err
		}
		out.Created = cur.Created
		_, err := tx.ExecContext(ctx, s.q(`UPDATE mcphost_toolsets SET spec = ?, version = ?, updated = ? WHERE name = ?`),
			string(spec), rev, now.UnixMilli(), name)
		return err
	})
	if err != nil {
		return Toolset{}, false, err
	}
	return out, created, nil
}

// DeleteToolset removes a toolset; ifVersion as for PutToolset. Without
// ifVersion, a toolset that is not there is ErrNoToolset.
func (s *Store) DeleteToolset(ctx context.Context, name string, ifVersion int64) error {
	return s.writeToolset(ctx, name, ifVersion, func(tx *sql.Tx, cur *Toolset, _ int64) error {
		if cur == nil {
			return ErrNoToolset
		}
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM mcphost_toolsets WHERE name = ?`), name)
		return err
	})
}

func (s *Store) writeToolset(ctx context.Context, name string, ifVersion int64, change func(tx *sql.Tx, cur *Toolset, rev int64) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `UPDATE mcphost_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision`).Scan(&rev); err != nil {
		return err
	}
	var cur *Toolset
	got, err := scanToolset(tx.QueryRowContext(ctx, s.q(`SELECT name, spec, version, created, updated FROM mcphost_toolsets WHERE name = ?`), name))
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
