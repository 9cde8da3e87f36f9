package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"
)

// migrations are the schema's versions, applied in order and never
// edited once released: a new need is a new entry. The SQL is the subset
// SQLite and PostgreSQL share (times are Unix milliseconds, sealed secrets
// base64 text), so one list serves both.
var migrations = []string{
	1: `CREATE TABLE mcphost_revision (id INTEGER PRIMARY KEY, revision BIGINT NOT NULL);
INSERT INTO mcphost_revision (id, revision) VALUES (1, 0);
CREATE TABLE mcphost_servers (
	name    TEXT PRIMARY KEY,
	spec    TEXT NOT NULL,
	secrets TEXT NOT NULL DEFAULT '',
	version BIGINT NOT NULL,
	created BIGINT NOT NULL,
	updated BIGINT NOT NULL
);`,
	// The audit log (host/audit): one row per line, the line as written
	// and the fields it is queried by. IDs are fixed-length lowercase hex
	// that sort as the lines' times, in any collation.
	2: `CREATE TABLE mcphost_audit (
	id      TEXT PRIMARY KEY,
	at      BIGINT NOT NULL,
	kind    TEXT NOT NULL,
	server  TEXT NOT NULL,
	tool    TEXT NOT NULL,
	subject TEXT NOT NULL,
	outcome TEXT NOT NULL,
	line    TEXT NOT NULL
);
CREATE INDEX mcphost_audit_at ON mcphost_audit (at);`,
	// Upstream OAuth grants (grants.go), sealed, by server and caller.
	3: `CREATE TABLE mcphost_grants (
	server  TEXT NOT NULL,
	subject TEXT NOT NULL,
	sealed  TEXT NOT NULL,
	updated BIGINT NOT NULL,
	PRIMARY KEY (server, subject)
);`,
	// 4: the key-value stores of tool plugins, one namespace per plugin;
	// values base64 (the SQL both share has no common binary type).
	4: `CREATE TABLE mcphost_plugin_kv (
	plugin  TEXT NOT NULL,
	k       TEXT NOT NULL,
	v       TEXT NOT NULL,
	updated BIGINT NOT NULL,
	PRIMARY KEY (plugin, k)
);`,
	// 5: the pins of builtin:pin plugins (pins.go), one row per plugin
	// and tool, shared by the replicas; row 2 of mcphost_revision counts
	// their changes, apart from the servers' row 1.
	5: `CREATE TABLE mcphost_pins (
	plugin  TEXT NOT NULL,
	k       TEXT NOT NULL,
	entry   TEXT NOT NULL,
	version BIGINT NOT NULL,
	updated BIGINT NOT NULL,
	PRIMARY KEY (plugin, k)
);
INSERT INTO mcphost_revision (id, revision) VALUES (2, 0);`,
	// 6: the key-value stores' sizes, so that a write can be held to the
	// limit without summing the namespace: each row's size (its key and
	// value bytes; estimated from the base64 for rows written before), and
	// one total per plugin, which writers lock.
	6: `ALTER TABLE mcphost_plugin_kv ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
UPDATE mcphost_plugin_kv SET size = LENGTH(k) + LENGTH(v) * 3 / 4;
CREATE TABLE mcphost_plugin_kv_size (
	plugin TEXT PRIMARY KEY,
	bytes  BIGINT NOT NULL
);
INSERT INTO mcphost_plugin_kv_size (plugin, bytes) SELECT plugin, SUM(size) FROM mcphost_plugin_kv GROUP BY plugin;`,
	// 7: the users added through the admin API (users.go): groups and
	// attributes as JSON, and their API keys by SHA-256 only; row 3 of
	// mcphost_revision counts their changes, which replicas poll often
	// so that a revoked key stops within a second.
	7: `CREATE TABLE mcphost_users (
	subject    TEXT PRIMARY KEY,
	groups     TEXT NOT NULL,
	attributes TEXT NOT NULL,
	disabled   INTEGER NOT NULL DEFAULT 0,
	version    BIGINT NOT NULL,
	created    BIGINT NOT NULL,
	updated    BIGINT NOT NULL
);
CREATE TABLE mcphost_user_keys (
	id      TEXT PRIMARY KEY,
	subject TEXT NOT NULL,
	name    TEXT NOT NULL,
	sha256  TEXT NOT NULL UNIQUE,
	created BIGINT NOT NULL
);
CREATE INDEX mcphost_user_keys_subject ON mcphost_user_keys (subject);
INSERT INTO mcphost_revision (id, revision) VALUES (3, 0);`,
	// 8: quotas added through the admin API (quotas.go), beside the
	// config file's; their changes bump row 1 of mcphost_revision, as the
	// servers' do, so that replicas follow them by the same poll.
	8: `CREATE TABLE mcphost_quotas (
	name    TEXT PRIMARY KEY,
	spec    TEXT NOT NULL,
	version BIGINT NOT NULL,
	created BIGINT NOT NULL,
	updated BIGINT NOT NULL
);`,
	// 9: the windows of quotas' calls, shared by replicas (quotas.go):
	// per quota (its name and definition's digest), budget and window
	// start (Unix nanoseconds), the calls counted; forgotten once expired.
	9: `CREATE TABLE mcphost_quota_windows (
	quota   TEXT NOT NULL,
	k       TEXT NOT NULL,
	win     BIGINT NOT NULL,
	calls   BIGINT NOT NULL,
	expires BIGINT NOT NULL,
	PRIMARY KEY (quota, k, win)
);
CREATE INDEX mcphost_quota_windows_expires ON mcphost_quota_windows (expires);`,
	// 10: callers' own secrets (callersecrets.go), sealed and bound to
	// (subject, name); row 4 of mcphost_revision counts their changes,
	// which replicas poll to restart the upstream sessions that used them.
	10: `CREATE TABLE mcphost_caller_secrets (
	subject TEXT NOT NULL,
	name    TEXT NOT NULL,
	sealed  TEXT NOT NULL,
	version BIGINT NOT NULL,
	updated BIGINT NOT NULL,
	PRIMARY KEY (subject, name)
);
INSERT INTO mcphost_revision (id, revision) VALUES (4, 0);`,
	// 11: keys the replicas share (keys.go): made by the first that asks,
	// sealed with the store key when there is one.
	11: `CREATE TABLE mcphost_keys (
	name    TEXT PRIMARY KEY,
	value   TEXT NOT NULL,
	created BIGINT NOT NULL
);`,
	// 12: toolsets added through the admin API (toolsets.go), beside the
	// config file's; their changes bump row 1 of mcphost_revision, as the
	// servers' and quotas' do, so that replicas follow them by one poll.
	12: `CREATE TABLE mcphost_toolsets (
	name    TEXT PRIMARY KEY,
	spec    TEXT NOT NULL,
	version BIGINT NOT NULL,
	created BIGINT NOT NULL,
	updated BIGINT NOT NULL
);`,
	// 13: the MCP tasks mcphost runs itself (tasks.go), for every replica:
	// times in Unix nanoseconds; outcome is '' until the task ends, then
	// its outcome, sealed with the store key when there is one; runner
	// and lease say which process runs it and until when it vouches.
	13: `CREATE TABLE mcphost_tasks (
	id      TEXT PRIMARY KEY,
	owner   TEXT NOT NULL,
	status  TEXT NOT NULL,
	message TEXT NOT NULL,
	created BIGINT NOT NULL,
	updated BIGINT NOT NULL,
	expires BIGINT NOT NULL,
	ttl_ms  BIGINT NOT NULL,
	poll_ms BIGINT NOT NULL,
	runner  TEXT NOT NULL,
	lease   BIGINT NOT NULL,
	outcome TEXT NOT NULL
);
CREATE INDEX mcphost_tasks_owner ON mcphost_tasks (owner);
CREATE INDEX mcphost_tasks_runner ON mcphost_tasks (runner, status);
CREATE INDEX mcphost_tasks_expires ON mcphost_tasks (expires);`,
}

// migrate applies the migrations the database lacks, each in its own
// transaction with its version row, so a crash leaves it at a whole
// version. Replicas starting together take turns: PostgreSQL by an
// advisory lock held on one connection from before the schema table is
// created to after the last migration (two CREATE TABLE IF NOT EXISTS at
// once can both try to create it), SQLite by its write lock.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.driver == Postgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(7701)`); err != nil {
			return err
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock(7701)`); err != nil {
				// A session lock outlives the pooled connection: end it.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS mcphost_schema (version INTEGER PRIMARY KEY, applied BIGINT NOT NULL)`); err != nil {
		return err
	}
	for v := 1; v < len(migrations); v++ {
		if err := s.apply(ctx, conn, v); err != nil {
			return fmt.Errorf("schema version %d: %w", v, err)
		}
	}
	var newest int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM mcphost_schema`).Scan(&newest); err != nil {
		return err
	}
	if newest >= len(migrations) {
		return fmt.Errorf("the database has schema version %d, newer than this mcphost knows (%d); run a newer mcphost", newest, len(migrations)-1)
	}
	return nil
}

func (s *Store) apply(ctx context.Context, conn *sql.Conn, v int) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var done int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM mcphost_schema WHERE version = ?`), v).Scan(&done); err != nil {
		return err
	}
	if done > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_schema (version, applied) VALUES (?, ?)`), v, time.Now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}
