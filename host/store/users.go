package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Errors of the users' methods; wrap-checked with errors.Is.
var (
	ErrNoUser     = errors.New("no such user")
	ErrUserExists = errors.New("a user of that subject is already in the store")
	ErrNoUserKey  = errors.New("the user has no key of that id")
)

// User is an identity added at run time: a caller whose API keys are kept
// here, by their SHA-256 only.
type User struct {
	Subject    string
	Groups     []string
	Attributes map[string]string
	// Disabled users' keys are kept but refused.
	Disabled bool
	Keys     []UserKey
	// Version is the users revision that last wrote the user, its keys
	// included.
	Version int64
	Created time.Time
	Updated time.Time
}

// UserKey is one API key of a User: the key itself is never stored.
type UserKey struct {
	ID      string // unique in the store; names the key in the API
	Name    string // a label, such as the machine it is for
	SHA256  [32]byte
	Created time.Time
}

// UsersRevision is the count of changes ever made to users and their
// keys: a replica that sees it move reads the users again.
func (s *Store) UsersRevision(ctx context.Context) (int64, error) {
	var rev int64
	if err := s.db.QueryRowContext(ctx, `SELECT revision FROM mcphost_revision WHERE id = 3`).Scan(&rev); err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	return rev, nil
}

// Users returns every stored user, by subject, with their keys, and the
// users revision they were read at.
func (s *Store) Users(ctx context.Context) ([]User, int64, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: s.driver == Postgres})
	if err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `SELECT revision FROM mcphost_revision WHERE id = 3`).Scan(&rev); err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	users, err := s.readUsers(ctx, tx, "")
	if err != nil {
		return nil, 0, err
	}
	return users, rev, tx.Commit()
}

// User returns one stored user; ErrNoUser if there is none.
func (s *Store) User(ctx context.Context, subject string) (User, error) {
	users, err := s.readUsers(ctx, s.db, subject)
	if err != nil {
		return User{}, err
	}
	if len(users) == 0 {
		return User{}, fmt.Errorf("user %q: %w", subject, ErrNoUser)
	}
	return users[0], nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readUsers reads every user, or the one of subject when it is not "".
func (s *Store) readUsers(ctx context.Context, q querier, subject string) ([]User, error) {
	userQuery, keyQuery := `SELECT subject, groups, attributes, disabled, version, created, updated FROM mcphost_users`, `SELECT id, subject, name, sha256, created FROM mcphost_user_keys`
	var args []any
	if subject != "" {
		userQuery += ` WHERE subject = ?`
		keyQuery += ` WHERE subject = ?`
		args = []any{subject}
	}
	rows, err := q.QueryContext(ctx, s.q(userQuery+` ORDER BY subject`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	var users []User
	index := map[string]int{}
	for rows.Next() {
		var u User
		var groups, attrs string
		var disabled int
		var created, updated int64
		if err := rows.Scan(&u.Subject, &groups, &attrs, &disabled, &u.Version, &created, &updated); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: %w", err)
		}
		if err := json.Unmarshal([]byte(groups), &u.Groups); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: user %q: groups: %w", u.Subject, err)
		}
		if err := json.Unmarshal([]byte(attrs), &u.Attributes); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: user %q: attributes: %w", u.Subject, err)
		}
		u.Disabled = disabled != 0
		u.Created, u.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
		index[u.Subject] = len(users)
		users = append(users, u)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	rows, err = q.QueryContext(ctx, s.q(keyQuery+` ORDER BY created, id`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k UserKey
		var owner, digest string
		var created int64
		if err := rows.Scan(&k.ID, &owner, &k.Name, &digest, &created); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		b, err := hex.DecodeString(digest)
		if err != nil || len(b) != len(k.SHA256) {
			return nil, fmt.Errorf("store: key %q of user %q: the stored digest is not SHA-256 hex", k.ID, owner)
		}
		copy(k.SHA256[:], b)
		k.Created = time.UnixMilli(created).UTC()
		if i, ok := index[owner]; ok {
			users[i].Keys = append(users[i].Keys, k)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return users, nil
}

// CreateUser adds u with its keys; ErrUserExists if the subject is taken.
func (s *Store) CreateUser(ctx context.Context, u User) (User, error) {
	return s.writeUser(ctx, u.Subject, func(tx *sql.Tx, cur *User, rev int64, now int64) error {
		if cur != nil {
			return fmt.Errorf("user %q: %w", u.Subject, ErrUserExists)
		}
		groups, attrs, err := encodeUser(u)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_users (subject, groups, attributes, disabled, version, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			u.Subject, groups, attrs, boolInt(u.Disabled), rev, now, now); err != nil {
			return err
		}
		for _, k := range u.Keys {
			if err := s.insertKey(ctx, tx, u.Subject, k, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// UpdateUser changes a user's groups, attributes or disabled flag (not
// its keys) in one transaction: change gets the stored user to edit.
func (s *Store) UpdateUser(ctx context.Context, subject string, change func(u *User) error) (User, error) {
	return s.writeUser(ctx, subject, func(tx *sql.Tx, cur *User, rev int64, now int64) error {
		if cur == nil {
			return fmt.Errorf("user %q: %w", subject, ErrNoUser)
		}
		next := *cur
		next.Groups, next.Attributes = slices.Clone(cur.Groups), cloneMap(cur.Attributes)
		if err := change(&next); err != nil {
			return err
		}
		groups, attrs, err := encodeUser(next)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE mcphost_users SET groups = ?, attributes = ?, disabled = ?, version = ?, updated = ? WHERE subject = ?`),
			groups, attrs, boolInt(next.Disabled), rev, now, subject)
		return err
	})
}

// DeleteUser removes a user and its keys; ErrNoUser if there is none.
func (s *Store) DeleteUser(ctx context.Context, subject string) error {
	_, err := s.writeUser(ctx, subject, func(tx *sql.Tx, cur *User, _ int64, _ int64) error {
		if cur == nil {
			return fmt.Errorf("user %q: %w", subject, ErrNoUser)
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM mcphost_user_keys WHERE subject = ?`), subject); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM mcphost_users WHERE subject = ?`), subject)
		return err
	})
	return err
}

// AddUserKey gives a user key k and, when replaces is not "", revokes its
// key of that id in the same transaction (a rotation: the old key works
// until the new one does). ErrNoUser, or ErrNoUserKey for replaces.
func (s *Store) AddUserKey(ctx context.Context, subject string, k UserKey, replaces string) (User, error) {
	return s.writeUser(ctx, subject, func(tx *sql.Tx, cur *User, rev int64, now int64) error {
		if cur == nil {
			return fmt.Errorf("user %q: %w", subject, ErrNoUser)
		}
		if replaces != "" {
			if err := s.deleteKey(ctx, tx, subject, replaces); err != nil {
				return err
			}
		}
		if err := s.insertKey(ctx, tx, subject, k, now); err != nil {
			return err
		}
		return s.touchUser(ctx, tx, subject, rev, now)
	})
}

// RevokeUserKey deletes a user's key of id; ErrNoUser or ErrNoUserKey.
func (s *Store) RevokeUserKey(ctx context.Context, subject, id string) (User, error) {
	return s.writeUser(ctx, subject, func(tx *sql.Tx, cur *User, rev int64, now int64) error {
		if cur == nil {
			return fmt.Errorf("user %q: %w", subject, ErrNoUser)
		}
		if err := s.deleteKey(ctx, tx, subject, id); err != nil {
			return err
		}
		return s.touchUser(ctx, tx, subject, rev, now)
	})
}

func (s *Store) insertKey(ctx context.Context, tx *sql.Tx, subject string, k UserKey, now int64) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO mcphost_user_keys (id, subject, name, sha256, created) VALUES (?, ?, ?, ?, ?)`),
		k.ID, subject, k.Name, hex.EncodeToString(k.SHA256[:]), now)
	return err
}

func (s *Store) deleteKey(ctx context.Context, tx *sql.Tx, subject, id string) error {
	res, err := tx.ExecContext(ctx, s.q(`DELETE FROM mcphost_user_keys WHERE subject = ? AND id = ?`), subject, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errors.Join(fmt.Errorf("user %q, key %q: %w", subject, id, ErrNoUserKey), err)
	}
	return nil
}

func (s *Store) touchUser(ctx context.Context, tx *sql.Tx, subject string, rev, now int64) error {
	_, err := tx.ExecContext(ctx, s.q(`UPDATE mcphost_users SET version = ?, updated = ? WHERE subject = ?`), rev, now, subject)
	return err
}

// writeUser runs one change to one user as a transaction, after bumping
// the users revision (row 3), which takes the write lock as write does
// for servers, and returns the user as the change left it.
func (s *Store) writeUser(ctx context.Context, subject string, change func(tx *sql.Tx, cur *User, rev int64, now int64) error) (User, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return User{}, fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	var rev int64
	if err := tx.QueryRowContext(ctx, `UPDATE mcphost_revision SET revision = revision + 1 WHERE id = 3 RETURNING revision`).Scan(&rev); err != nil {
		return User{}, fmt.Errorf("store: %w", err)
	}
	got, err := s.readUsers(ctx, tx, subject)
	if err != nil {
		return User{}, err
	}
	var cur *User
	if len(got) > 0 {
		cur = &got[0]
	}
	if err := change(tx, cur, rev, time.Now().UnixMilli()); err != nil {
		if errors.Is(err, ErrNoUser) || errors.Is(err, ErrUserExists) || errors.Is(err, ErrNoUserKey) {
			return User{}, err
		}
		return User{}, fmt.Errorf("store: %w", err)
	}
	after, err := s.readUsers(ctx, tx, subject)
	if err != nil {
		return User{}, err
	}
	if err := tx.Commit(); err != nil {
		return User{}, fmt.Errorf("store: %w", err)
	}
	if len(after) == 0 {
		return User{}, nil
	}
	return after[0], nil
}

func encodeUser(u User) (groups, attrs string, err error) {
	g := u.Groups
	if g == nil {
		g = []string{}
	}
	a := u.Attributes
	if a == nil {
		a = map[string]string{}
	}
	gb, err := json.Marshal(g)
	if err != nil {
		return "", "", err
	}
	ab, err := json.Marshal(a)
	if err != nil {
		return "", "", err
	}
	return string(gb), string(ab), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
