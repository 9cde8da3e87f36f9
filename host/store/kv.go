package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
)

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

// KVSet sets key in plugin's key-value store.
func (s *Store) KVSet(ctx context.Context, plugin, key string, value []byte) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO mcphost_plugin_kv (plugin, k, v, updated) VALUES (?, ?, ?, ?)
ON CONFLICT (plugin, k) DO UPDATE SET v = excluded.v, updated = excluded.updated`),
		plugin, key, base64.StdEncoding.EncodeToString(value), time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// KVDelete removes key from plugin's key-value store.
func (s *Store) KVDelete(ctx context.Context, plugin, key string) error {
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM mcphost_plugin_kv WHERE plugin = ? AND k = ?`), plugin, key); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
