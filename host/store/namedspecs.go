package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// NamedSpec is one named definition as stored (a quota, a toolset): Spec
// is its JSON, which the engine decodes (config.QuotaSpec,
// config.ToolsetSpec). Named specs hold no secrets.
type NamedSpec struct {
	Name string
	Spec []byte
	// Version is the store revision that last wrote the spec: unique and
	// increasing, so it serves as an ETag.
	Version int64
	Created time.Time
	Updated time.Time
}

// namedSpecs is one table of NamedSpec rows: quotaTable, toolsetTable.
// Its writes bump the store revision first (the write lock, as for
// servers) and honour If-Match versions.
type namedSpecs struct {
	table string // a constant of this package: it is written into the SQL
	none  error  // what get and delete return for a name that is not there
}

func (t namedSpecs) list(ctx context.Context, s *Store) ([]NamedSpec, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, spec, version, created, updated FROM `+t.table+` ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NamedSpec
	for rows.Next() {
		n, err := scanNamedSpec(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func (t namedSpecs) get(ctx context.Context, s *Store, name string) (NamedSpec, error) {
	n, err := scanNamedSpec(s.db.QueryRowContext(ctx, s.q(`SELECT name, spec, version, created, updated FROM `+t.table+` WHERE name = ?`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return NamedSpec{}, t.none
	}
	return n, err
}

func scanNamedSpec(r scanner) (NamedSpec, error) {
	var n NamedSpec
	var spec string
	var created, updated int64
	if err := r.Scan(&n.Name, &spec, &n.Version, &created, &updated); err != nil {
		return NamedSpec{}, err
	}
	n.Spec = []byte(spec)
	n.Created, n.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return n, nil
}

// put creates or replaces name's spec. ifVersion, when not 0, must be
// the stored version: ErrVersion otherwise, also when there is none.
// created reports that there was none.
func (t namedSpecs) put(ctx context.Context, s *Store, name string, spec []byte, ifVersion int64) (_ NamedSpec, created bool, _ error) {
	var out NamedSpec
	err := t.write(ctx, s, name, ifVersion, func(tx *sql.Tx, cur *NamedSpec, rev int64) error {
		now := time.Now().UTC().Truncate(time.Millisecond)
		out = NamedSpec{Name: name, Spec: spec, Version: rev, Created: now, Updated: now}
		if cur == nil {
			created = true
			_, err := tx.ExecContext(ctx, s.q(`INSERT INTO `+t.table+` (name, spec, version, created, updated) VALUES (?, ?, ?, ?, ?)`),
				name, string(spec), rev, now.UnixMilli(), now.UnixMilli())
			return err
		}
		out.Created = cur.Created
		_, err := tx.ExecContext(ctx, s.q(`UPDATE `+t.table+` SET spec = ?, version = ?, updated = ? WHERE name = ?`),
			string(spec), rev, now.UnixMilli(), name)
		return err
	})
	if err != nil {
		return NamedSpec{}, false, err
	}
	return out, created, nil
}

// delete removes name's spec; ifVersion as for put. Without ifVersion, a
// name that is not there is t.none.
func (t namedSpecs) delete(ctx context.Context, s *Store, name string, ifVersion int64) error {
	return t.write(ctx, s, name, ifVersion, func(tx *sql.Tx, cur *NamedSpec, _ int64) error {
		if cur == nil {
			return t.none
		}
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+t.table+` WHERE name = ?`), name)
		return err
	})
}

func (t namedSpecs) write(ctx context.Context, s *Store, name string, ifVersion int64, change func(tx *sql.Tx, cur *NamedSpec, rev int64) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `UPDATE mcphost_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision`).Scan(&rev); err != nil {
		return err
	}
	var cur *NamedSpec
	got, err := scanNamedSpec(tx.QueryRowContext(ctx, s.q(`SELECT name, spec, version, created, updated FROM `+t.table+` WHERE name = ?`), name))
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
