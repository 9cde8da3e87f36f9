package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SharedKeySize is the length of a shared key.
const SharedKeySize = 32

// plainKey marks a shared key kept unsealed (a store without a key).
const plainKey = "plain:"

// SharedKey returns the key named name that every process using this
// store shares (the replicas on one PostgreSQL): SharedKeySize random
// bytes, made by the first process that asks; when several ask at once,
// the first write stays and all read it. With the store's key it is kept
// sealed, bound to its name.
//
// A key that does not open with the store's key (which was changed) is
// replaced by a new one sealed with it: what it sealed is short-lived (the requestStates of calls in
// rounds, good for minutes), and a process that could not start over it
// would be worse than those calls failing once.
func (s *Store) SharedKey(ctx context.Context, name string) ([]byte, error) {
	k, ok, err := s.readKey(ctx, name)
	var stale errStaleKey
	if errors.As(err, &stale) && s.seal != nil {
		if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM mcphost_keys WHERE name = ? AND value = ?`), name, stale.value); err != nil {
			return nil, fmt.Errorf("store: shared key %q: replacing one that does not open: %w", name, err)
		}
		k, ok, err = s.readKey(ctx, name) // another process may have replaced it first
	}
	if err != nil || ok {
		return k, err
	}
	k = make([]byte, SharedKeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("store: shared key %q: %w", name, err)
	}
	v := plainKey + base64.StdEncoding.EncodeToString(k)
	if s.seal != nil {
		var err error
		if v, err = s.seal.close(k, "key:"+name); err != nil {
			return nil, fmt.Errorf("store: shared key %q: %w", name, err)
		}
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO mcphost_keys (name, value, created) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`),
		name, v, time.Now().Unix()); err != nil {
		return nil, fmt.Errorf("store: shared key %q: %w", name, err)
	}
	k, ok, err = s.readKey(ctx, name)
	if err == nil && !ok {
		err = fmt.Errorf("store: shared key %q: written, then not found", name)
	}
	return k, err
}

func (s *Store) readKey(ctx context.Context, name string) ([]byte, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT value FROM mcphost_keys WHERE name = ?`), name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: shared key %q: %w", name, err)
	}
	var k []byte
	if plain, ok := strings.CutPrefix(v, plainKey); ok {
		k, err = base64.StdEncoding.DecodeString(plain)
	} else {
		k, err = s.seal.open(v, "key:"+name)
	}
	if err == nil && len(k) != SharedKeySize {
		err = fmt.Errorf("it is %d bytes, not %d", len(k), SharedKeySize)
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: shared key %q: %w", name, errStaleKey{value: v, err: err})
	}
	return k, true, nil
}

// errStaleKey is a stored shared key that does not open (or is not one).
type errStaleKey struct {
	value string // as stored
	err   error
}

func (e errStaleKey) Error() string { return e.err.Error() }
func (e errStaleKey) Unwrap() error { return e.err }
