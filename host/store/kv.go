package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
)

// DefaultKVLimit is the bytes of keys and values one plugin's key-value
// store may hold when Options.KVLimit is 0: the same cap as the store in
// memory (plugins.KVLimit).
const DefaultKVLimit = 64 << 20

// ErrKVFull is KVSet's error when the write would take the plugin's store
// past its limit.
var ErrKVFull = errors.New("the plugin's key-value store is full")

// KVGet returns the value of key in plugin's key-value store (a tool
// plugin's, plugins.KVStore), or false.
func (s *Store) KVGet(ctx context.Context, plugin, key string) ([]byte, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT v FROM mcphost_plugin_kv WHERE plugin = ? AND k = ?`), plugin, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, false, fmt.Errorf("store: plugin %s key %q: %w", plugin, key, err)
	}
	return b, true, nil
}

// KVSet sets key in plugin's key-value store. A write that would take the
// store past its limit (keys and values, counted as the memory store
// counts them) fails with ErrKVFull and changes nothing; one that shrinks
// it always succeeds.
func (s *Store) KVSet(ctx context.Context, plugin, key string, value []byte) error {
	return s.kvChange(ctx, plugin, key, value, false)
}

// KVDelete removes key from plugin's key-value store.
func (s *Store) KVDelete(ctx context.Context, plugin, key string) error {
	return s.kvChange(ctx, plugin, key, nil, true)
}

// kvChange sets or deletes key in one transaction that holds the plugin's
// size row, so that writers in several processes (replicas on one
// PostgreSQL) cannot pass the limit together: PostgreSQL locks the row,
// SQLite's writers take turns on the database.
func (s *Store) kvChange(ctx context.Context, plugin, key string, value []byte, del bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_plugin_kv_size (plugin, bytes) VALUES (?, 0) ON CONFLICT (plugin) DO NOTHING`), plugin); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	lock := ""
	if s.driver == Postgres {
		lock = " FOR UPDATE"
	}
	var total, old int64
	if err := tx.QueryRowContext(ctx, s.q(`SELECT bytes FROM mcphost_plugin_kv_size WHERE plugin = ?`+lock), plugin).Scan(&total); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	err = tx.QueryRowContext(ctx, s.q(`SELECT size FROM mcphost_plugin_kv WHERE plugin = ? AND k = ?`), plugin, key).Scan(&old)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: %w", err)
	}
	size := int64(len(key) + len(value))
	if del {
		size = 0
		_, err = tx.ExecContext(ctx, s.q(`DELETE FROM mcphost_plugin_kv WHERE plugin = ? AND k = ?`), plugin, key)
	} else {
		if size > old && total-old+size > s.kvLimit {
			return fmt.Errorf("store: plugin %s, key %q: %d bytes would take its key-value store past %d bytes: %w", plugin, key, size, s.kvLimit, ErrKVFull)
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_plugin_kv (plugin, k, v, size, updated) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (plugin, k) DO UPDATE SET v = excluded.v, size = excluded.size, updated = excluded.updated`),
			plugin, key, base64.StdEncoding.EncodeToString(value), size, time.Now().UnixMilli())
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE mcphost_plugin_kv_size SET bytes = ? WHERE plugin = ?`), total-old+size, plugin); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
