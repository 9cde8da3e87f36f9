package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcphost-project/mcphost/host/grants"
)

// Grants keeps upstream OAuth grants (host/grants) in the store, sealed
// with its key, so that every replica on one PostgreSQL database serves a
// caller with the grant they made on any of them. It is a grants.Store.
type Grants struct{ s *Store }

// Grants returns the store's grants; the store must have a key (grants
// are credentials, never kept in the clear here).
func (s *Store) Grants() (*Grants, error) {
	if s.seal == nil {
		return nil, fmt.Errorf("store: OAuth grants are kept sealed, and %w", ErrNoKey)
	}
	return &Grants{s: s}, nil
}

// grantName binds a sealed grant to its row.
func grantName(server, subject string) string { return "grant\x00" + server + "\x00" + subject }

// Get returns the grant of (server, subject), nil when there is none.
func (g *Grants) Get(ctx context.Context, server, subject string) (*grants.Grant, error) {
	var sealed string
	err := g.s.db.QueryRowContext(ctx, g.s.q(`SELECT sealed FROM mcphost_grants WHERE server = ? AND subject = ?`), server, subject).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return g.open(server, subject, sealed)
}

func (g *Grants) open(server, subject, sealed string) (*grants.Grant, error) {
	plain, err := g.s.seal.open(sealed, grantName(server, subject))
	if err != nil {
		return nil, fmt.Errorf("the OAuth grant of server %q for %q: %w", server, subject, err)
	}
	var gr grants.Grant
	if err := json.Unmarshal(plain, &gr); err != nil {
		return nil, fmt.Errorf("the OAuth grant of server %q for %q: %w", server, subject, err)
	}
	gr.Server, gr.Subject = server, subject
	return &gr, nil
}

// Put stores gr, replacing the grant of its (server, subject).
func (g *Grants) Put(ctx context.Context, gr *grants.Grant) error {
	plain, err := json.Marshal(gr)
	if err != nil {
		return err
	}
	sealed, err := g.s.seal.close(plain, grantName(gr.Server, gr.Subject))
	if err != nil {
		return err
	}
	_, err = g.s.db.ExecContext(ctx, g.s.q(`INSERT INTO mcphost_grants (server, subject, sealed, updated) VALUES (?, ?, ?, ?)
ON CONFLICT (server, subject) DO UPDATE SET sealed = excluded.sealed, updated = excluded.updated`),
		gr.Server, gr.Subject, sealed, time.Now().UnixMilli())
	return err
}

// Delete removes the grant of (server, subject), if any.
func (g *Grants) Delete(ctx context.Context, server, subject string) error {
	_, err := g.s.db.ExecContext(ctx, g.s.q(`DELETE FROM mcphost_grants WHERE server = ? AND subject = ?`), server, subject)
	return err
}

// List returns every grant that opens, by server then subject; one that
// does not (the key changed) is left out, with the first such error.
func (g *Grants) List(ctx context.Context) ([]grants.Grant, error) {
	rows, err := g.s.db.QueryContext(ctx, `SELECT server, subject, sealed FROM mcphost_grants ORDER BY server, subject`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []grants.Grant
	var bad error
	for rows.Next() {
		var server, subject, sealed string
		if err := rows.Scan(&server, &subject, &sealed); err != nil {
			return nil, err
		}
		gr, err := g.open(server, subject, sealed)
		if err != nil {
			if bad == nil {
				bad = err
			}
			continue
		}
		out = append(out, *gr)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, bad
}

var _ grants.Store = (*Grants)(nil)
