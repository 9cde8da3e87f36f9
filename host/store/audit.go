package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/host/audit"
)

// Bounds of an audit query's page.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// ErrCursor is returned for a cursor this store did not give.
var ErrCursor = errors.New("store: not a cursor of the audit log")

// AuditQuery selects audit lines. Every field set narrows the selection;
// the zero query is the newest DefaultAuditLimit lines.
type AuditQuery struct {
	Server, Tool, Subject, Outcome, Kind string
	Since, Until                         time.Time // Since inclusive, Until exclusive; zero: unbounded
	// Before is the cursor of an earlier page (AuditPage.Next): only
	// older lines.
	Before string
	Limit  int // 0: DefaultAuditLimit; at most MaxAuditLimit
}

// AuditPage is a page of audit lines, newest first.
type AuditPage struct {
	Lines []json.RawMessage // each one line's JSON object, as written
	// Next is the cursor of the next (older) page, "" after the last.
	Next string
}

// AppendAudit stores records in one transaction (audit.Store); a record
// whose ID is stored already is skipped.
func (s *Store) AppendAudit(ctx context.Context, recs []audit.Record) error {
	if len(recs) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, s.q(`INSERT INTO mcphost_audit (id, at, kind, server, tool, subject, outcome, line)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`))
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range recs {
		if _, err := stmt.ExecContext(ctx, r.ID, r.Time.UnixMilli(), r.Kind, r.Server, r.Tool, r.Subject, r.Outcome, string(r.Line)); err != nil {
			return fmt.Errorf("store: audit line %s: %w", r.ID, err)
		}
	}
	return tx.Commit()
}

// PruneAudit removes the lines older than before (zero: none by age) and
// all but the keep newest (keep < 0: none by count); it returns how many
// went (audit.Store).
func (s *Store) PruneAudit(ctx context.Context, before time.Time, keep int) (int64, error) {
	var n int64
	if !before.IsZero() {
		res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM mcphost_audit WHERE at < ?`), before.UnixMilli())
		if err != nil {
			return 0, err
		}
		m, _ := res.RowsAffected()
		n += m
	}
	if keep >= 0 {
		query, args := `DELETE FROM mcphost_audit`, []any{}
		if keep > 0 {
			// Everything older than the keep-th newest; with fewer lines
			// the subquery is NULL and nothing matches.
			query += ` WHERE id < (SELECT id FROM mcphost_audit ORDER BY id DESC LIMIT 1 OFFSET ?)`
			args = append(args, keep-1)
		}
		res, err := s.db.ExecContext(ctx, s.q(query), args...)
		if err != nil {
			return n, err
		}
		m, _ := res.RowsAffected()
		n += m
	}
	return n, nil
}

// QueryAudit returns a page of the lines q selects, newest first.
func (s *Store) QueryAudit(ctx context.Context, q AuditQuery) (AuditPage, error) {
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultAuditLimit
	case limit > MaxAuditLimit:
		limit = MaxAuditLimit
	}
	var where []string
	var args []any
	for _, f := range []struct{ column, value string }{
		{"server", q.Server}, {"tool", q.Tool}, {"subject", q.Subject}, {"outcome", q.Outcome}, {"kind", q.Kind},
	} {
		if f.value != "" {
			where = append(where, f.column+" = ?")
			args = append(args, f.value)
		}
	}
	if !q.Since.IsZero() {
		where, args = append(where, "at >= ?"), append(args, q.Since.UnixMilli())
	}
	if !q.Until.IsZero() {
		where, args = append(where, "at < ?"), append(args, q.Until.UnixMilli())
	}
	if q.Before != "" {
		id, err := DecodeCursor(q.Before)
		if err != nil {
			return AuditPage{}, err
		}
		where, args = append(where, "id < ?"), append(args, id)
	}
	query := `SELECT id, line FROM mcphost_audit`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit+1) // one more says whether there is a next page
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return AuditPage{}, err
	}
	defer rows.Close()
	page := AuditPage{Lines: []json.RawMessage{}}
	var last string
	for rows.Next() {
		var id, line string
		if err := rows.Scan(&id, &line); err != nil {
			return AuditPage{}, err
		}
		if len(page.Lines) == limit {
			page.Next = EncodeCursor(last)
			break
		}
		page.Lines = append(page.Lines, json.RawMessage(line))
		last = id
	}
	return page, rows.Err()
}

// cursorPrefix versions the cursor's encoding.
const cursorPrefix = "a1."

// EncodeCursor is the cursor of the page after the line id: opaque to
// clients, so its form may change.
func EncodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + id))
}

// DecodeCursor returns the line ID a cursor of EncodeCursor holds, or
// ErrCursor.
func DecodeCursor(c string) (string, error) {
	if len(c) > 64 {
		return "", ErrCursor
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c) // one spelling per cursor
	if err != nil {
		return "", ErrCursor
	}
	id, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok || !audit.ValidID(id) {
		return "", ErrCursor
	}
	return id, nil
}

var _ audit.Store = (*Store)(nil)
