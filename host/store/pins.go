package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrPinChanged is PutPin's error when the stored pin is not at the
// version the change expects: another replica wrote it first.
var ErrPinChanged = errors.New("store: the pin changed since that version")

// Pin is one tool a builtin:pin plugin pins, as stored: Entry is its JSON
// (a policies.PinEntry, which the store does not read).
type Pin struct {
	Key   string // server/tool
	Entry []byte
	// Version is the pins revision that wrote it: unique and increasing.
	Version int64
}

// PinsRevision is the count of pin changes ever made: a replica that sees
// it move reads the pins again.
func (s *Store) PinsRevision(ctx context.Context) (int64, error) {
	var rev int64
	err := s.db.QueryRowContext(ctx, `SELECT revision FROM mcphost_revision WHERE id = 2`).Scan(&rev)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	return rev, nil
}

// Pins returns plugin's pins, by key, and the pins revision they were read
// at.
func (s *Store) Pins(ctx context.Context, plugin string) ([]Pin, int64, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: s.driver == Postgres})
	if err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `SELECT revision FROM mcphost_revision WHERE id = 2`).Scan(&rev); err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	rows, err := tx.QueryContext(ctx, s.q(`SELECT k, entry, version FROM mcphost_pins WHERE plugin = ? ORDER BY k`), plugin)
	if err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []Pin
	for rows.Next() {
		var p Pin
		var entry string
		if err := rows.Scan(&p.Key, &entry, &p.Version); err != nil {
			return nil, 0, fmt.Errorf("store: %w", err)
		}
		p.Entry = []byte(entry)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	return out, rev, nil
}

// PutPin sets plugin's pin of key to entry, or deletes it when entry is
// nil, if the stored pin is at version ifVersion (0: if there is none);
// otherwise it changes nothing and returns ErrPinChanged. It returns the
// new version (0 after a delete).
func (s *Store) PutPin(ctx context.Context, plugin, key string, entry []byte, ifVersion int64) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	// The revision row first: on PostgreSQL its lock queues concurrent
	// writers, so the version check below reads a settled row.
	var rev int64
	if err := tx.QueryRowContext(ctx, `UPDATE mcphost_revision SET revision = revision + 1 WHERE id = 2 RETURNING revision`).Scan(&rev); err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	var cur int64
	err = tx.QueryRowContext(ctx, s.q(`SELECT version FROM mcphost_pins WHERE plugin = ? AND k = ?`), plugin, key).Scan(&cur)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: %w", err)
	}
	if cur != ifVersion {
		return 0, ErrPinChanged
	}
	now := time.Now().UnixMilli()
	switch {
	case entry == nil && cur == 0:
		return 0, nil
	case entry == nil:
		_, err = tx.ExecContext(ctx, s.q(`DELETE FROM mcphost_pins WHERE plugin = ? AND k = ?`), plugin, key)
		rev = 0
	case cur == 0:
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_pins (plugin, k, entry, version, updated) VALUES (?, ?, ?, ?, ?)`), plugin, key, string(entry), rev, now)
	default:
		_, err = tx.ExecContext(ctx, s.q(`UPDATE mcphost_pins SET entry = ?, version = ?, updated = ? WHERE plugin = ? AND k = ?`), string(entry), rev, now, plugin, key)
	}
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	return rev, nil
}
