package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Caller secrets: a caller's own values for the servers whose settings
// read ${caller.secrets.NAME} (an API token of theirs for one upstream).
// Each is sealed with the store key, with its (subject, name) as the
// additional data, so that a sealed value copied onto another row does
// not open. Their names and versions can be listed; their values are
// read one caller at a time, for that caller's upstream session. Row 4 of
// mcphost_revision counts their changes.

// ErrNoCallerSecret is returned for a secret that is not stored.
var ErrNoCallerSecret = errors.New("no such secret")

// CallerSecret is a stored secret without its value.
type CallerSecret struct {
	Subject, Name string
	// Version is the secrets revision that last wrote it.
	Version int64
	Updated time.Time
}

// callerSecretName binds a sealed secret to its row.
func callerSecretName(subject, name string) string {
	return "caller-secret\x00" + subject + "\x00" + name
}

// CallerSecretsRevision is the count of changes ever made to callers'
// secrets: a replica that sees it move lists them again.
func (s *Store) CallerSecretsRevision(ctx context.Context) (int64, error) {
	var rev int64
	if err := s.db.QueryRowContext(ctx, `SELECT revision FROM mcphost_revision WHERE id = 4`).Scan(&rev); err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	return rev, nil
}

// SetCallerSecret stores value as subject's secret name, replacing the
// one stored; the store must have a key.
func (s *Store) SetCallerSecret(ctx context.Context, subject, name string, value []byte) (CallerSecret, error) {
	sealed, err := s.seal.close(value, callerSecretName(subject, name))
	if err != nil {
		return CallerSecret{}, fmt.Errorf("store: callers' secrets are kept sealed, and %w", err)
	}
	var out CallerSecret
	err = s.writeCallerSecrets(ctx, func(tx *sql.Tx, rev, now int64) error {
		out = CallerSecret{Subject: subject, Name: name, Version: rev, Updated: time.UnixMilli(now).UTC()}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_caller_secrets (subject, name, sealed, version, updated) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (subject, name) DO UPDATE SET sealed = excluded.sealed, version = excluded.version, updated = excluded.updated`),
			subject, name, sealed, rev, now)
		return err
	})
	return out, err
}

// DeleteCallerSecret removes subject's secret name; ErrNoCallerSecret if
// there is none.
func (s *Store) DeleteCallerSecret(ctx context.Context, subject, name string) error {
	return s.writeCallerSecrets(ctx, func(tx *sql.Tx, _, _ int64) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM mcphost_caller_secrets WHERE subject = ? AND name = ?`), subject, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("secret %q of %q: %w", name, subject, ErrNoCallerSecret)
		}
		return nil
	})
}

// writeCallerSecrets runs one change as a transaction, after bumping the
// secrets revision (which takes the write lock, as write does).
func (s *Store) writeCallerSecrets(ctx context.Context, change func(tx *sql.Tx, rev, now int64) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `UPDATE mcphost_revision SET revision = revision + 1 WHERE id = 4 RETURNING revision`).Scan(&rev); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := change(tx, rev, time.Now().UnixMilli()); err != nil {
		if errors.Is(err, ErrNoCallerSecret) {
			return err
		}
		return fmt.Errorf("store: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// CallerSecrets lists the stored secrets of subject, or of every caller
// when subject is "", by subject then name, without their values, and
// the secrets revision they were read at.
func (s *Store) CallerSecrets(ctx context.Context, subject string) ([]CallerSecret, int64, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: s.driver == Postgres})
	if err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `SELECT revision FROM mcphost_revision WHERE id = 4`).Scan(&rev); err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	query, args := `SELECT subject, name, version, updated FROM mcphost_caller_secrets`, []any{}
	if subject != "" {
		query, args = query+` WHERE subject = ?`, []any{subject}
	}
	rows, err := tx.QueryContext(ctx, s.q(query+` ORDER BY subject, name`), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []CallerSecret
	for rows.Next() {
		var c CallerSecret
		var updated int64
		if err := rows.Scan(&c.Subject, &c.Name, &c.Version, &updated); err != nil {
			return nil, 0, fmt.Errorf("store: %w", err)
		}
		c.Updated = time.UnixMilli(updated).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	return out, rev, tx.Commit()
}

// CallerSecretValue is a stored secret's value and version.
type CallerSecretValue struct {
	Value   []byte
	Version int64
}

// CallerSecretValues returns the values of subject's secrets of names
// that are stored; a name without one is left out.
func (s *Store) CallerSecretValues(ctx context.Context, subject string, names []string) (map[string]CallerSecretValue, error) {
	out := make(map[string]CallerSecretValue, len(names))
	for _, name := range names {
		var sealed string
		var version int64
		err := s.db.QueryRowContext(ctx, s.q(`SELECT sealed, version FROM mcphost_caller_secrets WHERE subject = ? AND name = ?`), subject, name).Scan(&sealed, &version)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		plain, err := s.seal.open(sealed, callerSecretName(subject, name))
		if err != nil {
			return nil, fmt.Errorf("store: the secret %q of %q: %w", name, subject, err)
		}
		out[name] = CallerSecretValue{Value: plain, Version: version}
	}
	return out, nil
}
