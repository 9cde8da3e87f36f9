package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/host/tasks"
)

// The MCP tasks mcphost runs itself, kept for every replica (tasks.Store;
// the why is in host/tasks). A task's outcome is sealed with the store key
// when the store has one, bound to the task's id and owner, so that it
// cannot be read from the database nor moved to another row; without a
// key it is kept as it is, as the audit log keeps calls.

var _ tasks.Store = (*Store)(nil)

// taskSealName binds a sealed outcome to its row.
func taskSealName(owner, id string) string { return "task\x00" + owner + "\x00" + id }

// plainOutcome marks an outcome kept unsealed.
const plainOutcome = "plain:"

// PutTask writes a new task.
func (s *Store) PutTask(ctx context.Context, r tasks.Record) error {
	t := r.Task
	created, err := time.Parse(time.RFC3339Nano, t.CreatedAt)
	if err != nil {
		return fmt.Errorf("store: task %s: createdAt: %w", t.TaskID, err)
	}
	var ttl, poll int64
	if t.TTL != nil {
		ttl = *t.TTL
	}
	if t.PollInterval != nil {
		poll = *t.PollInterval
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO mcphost_tasks (id, owner, status, message, created, updated, expires, ttl_ms, poll_ms, runner, lease, outcome)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '')`),
		t.TaskID, r.Owner, t.Status, t.StatusMessage, created.UnixNano(), created.UnixNano(), r.Expires.UnixNano(), ttl, poll, r.Runner, r.Lease.UnixNano())
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// EndTask ends task id with t's status, message and time and outcome,
// unless it already ended (false).
func (s *Store) EndTask(ctx context.Context, id string, t tasks.Task, outcome []byte) (bool, error) {
	var owner string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT owner FROM mcphost_tasks WHERE id = ?`), id).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	sealed, err := s.sealOutcome(owner, id, outcome)
	if err != nil {
		return false, err
	}
	updated, err := time.Parse(time.RFC3339Nano, t.LastUpdatedAt)
	if err != nil {
		return false, fmt.Errorf("store: task %s: lastUpdatedAt: %w", id, err)
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE mcphost_tasks SET status = ?, message = ?, updated = ?, outcome = ?
WHERE id = ? AND status NOT IN ('completed', 'failed', 'cancelled')`),
		t.Status, t.StatusMessage, updated.UnixNano(), sealed, id)
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	return n == 1, nil
}

func (s *Store) sealOutcome(owner, id string, outcome []byte) (string, error) {
	if s.seal == nil {
		return plainOutcome + string(outcome), nil
	}
	sealed, err := s.seal.close(outcome, taskSealName(owner, id))
	if err != nil {
		return "", fmt.Errorf("store: sealing task %s's outcome: %w", id, err)
	}
	return sealed, nil
}

func (s *Store) openOutcome(owner, id, stored string) ([]byte, error) {
	if stored == "" {
		return nil, nil
	}
	if plain, ok := strings.CutPrefix(stored, plainOutcome); ok {
		return []byte(plain), nil
	}
	plain, err := s.seal.open(stored, taskSealName(owner, id))
	if err != nil {
		return nil, fmt.Errorf("store: task %s's outcome: %w", id, err)
	}
	return plain, nil
}

const taskColumns = `id, owner, status, message, created, updated, expires, ttl_ms, poll_ms, runner, lease, outcome`

func (s *Store) scanTask(row scanner) (tasks.Record, error) {
	var r tasks.Record
	var created, updated, expires, ttl, poll, lease int64
	var outcome string
	if err := row.Scan(&r.Task.TaskID, &r.Owner, &r.Task.Status, &r.Task.StatusMessage, &created, &updated, &expires, &ttl, &poll, &r.Runner, &lease, &outcome); err != nil {
		return tasks.Record{}, err
	}
	r.Task.CreatedAt, r.Task.LastUpdatedAt = tasks.Stamp(time.Unix(0, created)), tasks.Stamp(time.Unix(0, updated))
	r.Task.TTL = &ttl
	if poll > 0 {
		r.Task.PollInterval = &poll
	}
	r.Expires, r.Lease = time.Unix(0, expires), time.Unix(0, lease)
	var err error
	if r.Outcome, err = s.openOutcome(r.Owner, r.Task.TaskID, outcome); err != nil {
		return tasks.Record{}, err
	}
	return r, nil
}

// Task returns owner's task id; another owner's, or one expired, is
// tasks.ErrUnknownTask.
func (s *Store) Task(ctx context.Context, owner, id string, now time.Time) (tasks.Record, error) {
	r, err := s.scanTask(s.db.QueryRowContext(ctx, s.q(`SELECT `+taskColumns+` FROM mcphost_tasks WHERE id = ? AND owner = ? AND expires > ?`), id, owner, now.UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return tasks.Record{}, tasks.ErrUnknownTask
	}
	if err != nil {
		return tasks.Record{}, fmt.Errorf("store: %w", err)
	}
	return r, nil
}

// Tasks returns owner's tasks that have not expired, oldest first.
func (s *Store) Tasks(ctx context.Context, owner string, now time.Time) ([]tasks.Record, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+taskColumns+` FROM mcphost_tasks WHERE owner = ? AND expires > ? ORDER BY created, id`), owner, now.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []tasks.Record
	for rows.Next() {
		r, err := s.scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return out, nil
}

// EndedTasks returns those of ids, tasks runner runs, that ended here.
func (s *Store) EndedTasks(ctx context.Context, runner string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := []any{runner}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id FROM mcphost_tasks WHERE runner = ? AND status IN ('completed', 'failed', 'cancelled') AND id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return out, nil
}

// RenewTasks extends the lease of runner's unfinished tasks to until.
func (s *Store) RenewTasks(ctx context.Context, runner string, until time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE mcphost_tasks SET lease = ? WHERE runner = ? AND status NOT IN ('completed', 'failed', 'cancelled')`), until.UnixNano(), runner)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// DeleteTask forgets owner's task id.
func (s *Store) DeleteTask(ctx context.Context, owner, id string) error {
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM mcphost_tasks WHERE id = ? AND owner = ?`), id, owner); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// PruneTasks forgets the tasks that expired before now.
func (s *Store) PruneTasks(ctx context.Context, now time.Time) error {
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM mcphost_tasks WHERE expires <= ?`), now.UnixNano()); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
