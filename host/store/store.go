// Package store keeps what mcphost learns at run time (servers added
// through the admin API) in a real database: an SQLite file by default, or
// PostgreSQL when several replicas share one state. Every change is one
// transaction; a global revision, bumped by each change, lets replicas
// notice the others' changes by polling one row.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite" (pure Go: the binary stays static)
)

// Drivers a Store runs on.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Errors a Store returns; wrap-checked with errors.Is.
var (
	ErrNotFound = errors.New("no such server")
	ErrExists   = errors.New("a server of that name is already in the store")
	// ErrVersion is returned when a change names the version it expects
	// (If-Match) and the stored one differs.
	ErrVersion = errors.New("the server changed since that version")
	// ErrNoKey is returned for secrets when the store has no key.
	ErrNoKey = errors.New("the store has no encryption key, so it keeps no secrets (set store { key = env(\"MCPHOST_STORE_KEY\") } to 32 random bytes, base64)")
)

// Server is one server definition as stored: Spec is its JSON without the
// secret values, Secrets the JSON of those (sealed at rest; plain here).
type Server struct {
	Name    string
	Spec    []byte
	Secrets []byte
	// SecretsErr says why the sealed secrets did not open (the store key
	// changed or is missing); Secrets is then nil. The row is still
	// listed, so that it can be shown, replaced or deleted.
	SecretsErr error
	// Version is the store revision that last wrote the server: unique and
	// increasing, so it serves as an ETag.
	Version int64
	Created time.Time
	Updated time.Time
}

// Options opens a Store.
type Options struct {
	Driver string // SQLite or Postgres
	// DSN is the SQLite file path, or a postgres:// URL.
	DSN string
	// Key seals secrets (AES-256-GCM); nil refuses to store any.
	Key []byte
	// KVLimit caps each tool plugin's key-value store, in bytes of keys
	// and values; 0 means DefaultKVLimit.
	KVLimit int64
}

// Store is a database of run-time state; safe for concurrent use, and by
// several processes on the same database.
type Store struct {
	db      *sql.DB
	driver  string
	seal    *sealer
	kvLimit int64
}

// Open connects, applies pending schema migrations and returns the store.
func Open(ctx context.Context, o Options) (*Store, error) {
	seal, err := newSealer(o.Key)
	if err != nil {
		return nil, err
	}
	var db *sql.DB
	switch o.Driver {
	case SQLite:
		if err := privateFiles(o.DSN); err != nil {
			return nil, err
		}
		db, err = sql.Open("sqlite", sqliteDSN(o.DSN))
		if err == nil {
			// One writer at a time is SQLite's rule; one connection keeps
			// writers in this process from queueing on busy_timeout.
			db.SetMaxOpenConns(1)
		}
	case Postgres:
		db, err = sql.Open("pgx", o.DSN)
	default:
		return nil, fmt.Errorf("store: unknown driver %q (want %q or %q)", o.Driver, SQLite, Postgres)
	}
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", o.Driver, err)
	}
	s := &Store{db: db, driver: o.Driver, seal: seal, kvLimit: o.KVLimit}
	if s.kvLimit <= 0 {
		s.kvLimit = DefaultKVLimit
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connecting to %s: %w", Describe(o.Driver, o.DSN), err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: migrating %s: %w", Describe(o.Driver, o.DSN), err)
	}
	return s, nil
}

// privateFiles makes the SQLite file at path, and the -wal and -shm files
// beside it, readable by this user alone: they hold audit lines, server
// arguments and plugins' data. A new database file is created 0600 whatever
// the umask (SQLite gives its -wal and -shm files the database file's
// mode); existing ones that others may read are narrowed to 0600.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("store: creating the SQLite file: %w", err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("store: %w", err)
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return fmt.Errorf("store: %s may be read by other users (mode %04o) and could not be made 0600: %w", p, fi.Mode().Perm(), err)
			}
		}
	}
	return nil
}

// sqliteDSN asks for WAL (readers do not wait on the writer), a busy
// timeout (another process writing waits rather than fails) and
// BEGIN IMMEDIATE (a write transaction takes the write lock up front, so
// two never deadlock upgrading).
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// Describe names a database for errors and logs without its password: a
// PostgreSQL URL by its host and database only, a keyword/value DSN
// ("host=db password=...") not at all.
func Describe(driver, dsn string) string {
	if driver == Postgres {
		if u, err := url.Parse(dsn); err == nil && u.Host != "" {
			return "PostgreSQL at " + u.Host + u.Path
		}
		return "PostgreSQL"
	}
	return "SQLite file " + dsn
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// CanKeepSecrets reports whether the store has a key.
func (s *Store) CanKeepSecrets() bool { return s.seal != nil }

// q rewrites ? placeholders as PostgreSQL's $n.
func (s *Store) q(query string) string {
	if s.driver != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Revision is the count of changes ever made: a replica that sees it move
// re-reads the servers.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	var rev int64
	err := s.db.QueryRowContext(ctx, `SELECT revision FROM mcphost_revision WHERE id = 1`).Scan(&rev)
	return rev, err
}

// Servers returns every stored server, by name, and the revision they were
// read at. A server whose secrets do not open is listed with SecretsErr.
func (s *Store) Servers(ctx context.Context) ([]Server, int64, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: s.driver == Postgres})
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `SELECT revision FROM mcphost_revision WHERE id = 1`).Scan(&rev); err != nil {
		return nil, 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, spec, secrets, version, created, updated FROM mcphost_servers ORDER BY name`)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []Server
	for rows.Next() {
		sv, err := s.scan(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, sv)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return out, rev, tx.Commit()
}

// Server returns one stored server (with SecretsErr if its secrets do not
// open).
func (s *Store) Server(ctx context.Context, name string) (Server, error) {
	row := s.db.QueryRowContext(ctx, s.q(`SELECT name, spec, secrets, version, created, updated FROM mcphost_servers WHERE name = ?`), name)
	sv, err := s.scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Server{}, ErrNotFound
	}
	return sv, err
}

type scanner interface{ Scan(...any) error }

func (s *Store) scan(r scanner) (Server, error) {
	var sv Server
	var spec, sealed string
	var created, updated int64
	if err := r.Scan(&sv.Name, &spec, &sealed, &sv.Version, &created, &updated); err != nil {
		return Server{}, err
	}
	sv.Spec = []byte(spec)
	sv.Created, sv.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	if sealed != "" {
		plain, err := s.seal.open(sealed, sv.Name)
		if err != nil {
			sv.SecretsErr = fmt.Errorf("server %q: %w", sv.Name, err)
		}
		sv.Secrets = plain
	}
	return sv, nil
}

// Create adds a server; ErrExists if the name is taken.
func (s *Store) Create(ctx context.Context, sv Server) (Server, error) {
	out, _, err := s.write(ctx, sv.Name, func(cur *Server) (*Server, error) {
		if cur != nil {
			return nil, ErrExists
		}
		return &sv, nil
	})
	return out, err
}

// Update changes a server in one transaction: change gets the stored
// server (nil if there is none) and returns what to store. ifVersion, when
// not 0, must be the stored version: ErrVersion otherwise, also when there
// is none (an If-Match on nothing fails, RFC 9110). created reports that
// there was none.
func (s *Store) Update(ctx context.Context, name string, ifVersion int64, change func(cur *Server) (*Server, error)) (_ Server, created bool, _ error) {
	return s.write(ctx, name, func(cur *Server) (*Server, error) {
		if ifVersion != 0 && (cur == nil || cur.Version != ifVersion) {
			return nil, ErrVersion
		}
		return change(cur)
	})
}

// Delete removes a server; ifVersion as for Update. Without ifVersion, a
// server that is not there is ErrNotFound.
func (s *Store) Delete(ctx context.Context, name string, ifVersion int64) error {
	_, _, err := s.write(ctx, name, func(cur *Server) (*Server, error) {
		if ifVersion != 0 && (cur == nil || cur.Version != ifVersion) {
			return nil, ErrVersion
		}
		if cur == nil {
			return nil, ErrNotFound
		}
		return nil, nil
	})
	return err
}

// write runs one change to one server as a transaction. The revision row
// is bumped first: that takes the write lock (PostgreSQL's row lock,
// SQLite's immediate transaction), so concurrent writers queue instead of
// reading what the other is about to change. change returning nil, nil
// deletes the server.
func (s *Store) write(ctx context.Context, name string, change func(cur *Server) (*Server, error)) (Server, bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Server{}, false, err
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `UPDATE mcphost_revision SET revision = revision + 1 WHERE id = 1 RETURNING revision`).Scan(&rev); err != nil {
		return Server{}, false, err
	}
	var cur *Server
	got, err := s.scan(tx.QueryRowContext(ctx, s.q(`SELECT name, spec, secrets, version, created, updated FROM mcphost_servers WHERE name = ?`), name))
	switch {
	case err == nil:
		cur = &got
	case !errors.Is(err, sql.ErrNoRows):
		return Server{}, false, err
	}
	next, err := change(cur)
	if err != nil {
		return Server{}, false, err
	}
	if next != nil && next.SecretsErr != nil {
		// Secrets that did not open, written back, would be lost.
		return Server{}, false, next.SecretsErr
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if next == nil {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM mcphost_servers WHERE name = ?`), name); err != nil {
			return Server{}, false, err
		}
		return Server{}, false, tx.Commit()
	}
	out := Server{Name: name, Spec: next.Spec, Secrets: next.Secrets, Version: rev, Created: now, Updated: now}
	sealed := ""
	if len(next.Secrets) > 0 {
		if sealed, err = s.seal.close(next.Secrets, name); err != nil {
			return Server{}, false, err
		}
	}
	if cur == nil {
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_servers (name, spec, secrets, version, created, updated) VALUES (?, ?, ?, ?, ?, ?)`),
			name, string(next.Spec), sealed, rev, now.UnixMilli(), now.UnixMilli())
	} else {
		out.Created = cur.Created
		_, err = tx.ExecContext(ctx, s.q(`UPDATE mcphost_servers SET spec = ?, secrets = ?, version = ?, updated = ? WHERE name = ?`),
			string(next.Spec), sealed, rev, now.UnixMilli(), name)
	}
	if err != nil {
		return Server{}, false, err
	}
	if err := tx.Commit(); err != nil {
		return Server{}, false, err
	}
	return out, cur == nil, nil
}
