package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/store"
)

// Run-time users: identities whose API keys are kept in the store (as
// SHA-256 digests) and managed through the admin API, beside the config
// file's listen.auth keys, which are read-only here. A change is stored,
// applied to this process at once, and reaches the other replicas within
// UsersPoll; the downstream sessions of a key that no longer works are
// closed.

// UsersPoll is how often a replica looks at the users revision (or
// store.poll, when shorter): a revoked key stops within it.
const UsersPoll = 250 * time.Millisecond

// ErrConfigUser is returned for a change to an identity of the config
// file (a listen.auth key, or the auth_token shorthand's "token").
var ErrConfigUser = errors.New("defined in the config file")

// UserError is a user definition refused: Field names the field at fault.
type UserError struct {
	Field  string
	Detail string
}

func (e *UserError) Error() string { return e.Field + ": " + e.Detail }

// UserSpec is what a caller sets of a user.
type UserSpec struct {
	Subject    string
	Groups     []string
	Attributes map[string]string
	Disabled   bool
}

// UserPatch changes the fields that are not nil.
type UserPatch struct {
	Groups     *[]string
	Attributes *map[string]string
	Disabled   *bool
}

// UserInfo is a user as the admin API shows it. A user of the config file
// is one listen.auth key block (its name in Keys, with no id).
type UserInfo struct {
	Subject    string            `json:"subject"`
	Groups     []string          `json:"groups"`
	Attributes map[string]string `json:"attributes"`
	Disabled   bool              `json:"disabled"`
	Source     string            `json:"source"`
	Keys       []KeyInfo         `json:"keys"`
	Version    int64             `json:"version,omitempty"`
	Created    *time.Time        `json:"created,omitempty"`
	Updated    *time.Time        `json:"updated,omitempty"`
	// Problem says why a stored user's keys do not work: the config file
	// now defines its subject.
	Problem string `json:"problem,omitempty"`
}

// KeyInfo is one API key of a user, without the key.
type KeyInfo struct {
	ID      string     `json:"id,omitempty"`
	Name    string     `json:"name,omitempty"`
	Created *time.Time `json:"created,omitempty"`
}

// NewKey is a key just made: Key is its value, shown this once.
type NewKey struct {
	KeyInfo
	Key string `json:"key"`
}

// Limits of a user definition.
const (
	maxSubject   = 256
	maxGroups    = 64
	maxAttrs     = 64
	maxFieldText = 256
)

// Users lists the config file's identities (one per listen.auth key, in
// file order), then the store's users by subject.
func (e *Engine) Users(ctx context.Context) ([]UserInfo, error) {
	file := e.File()
	out := configUsers(file)
	if e.store == nil {
		return out, nil
	}
	stored, _, err := e.store.Users(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the store: %w", err)
	}
	for _, u := range stored {
		out = append(out, storedUser(u, file))
	}
	return out, nil
}

// User returns one user; store.ErrNoUser if there is none.
func (e *Engine) User(ctx context.Context, subject string) (UserInfo, error) {
	file := e.File()
	for _, u := range configUsers(file) {
		if u.Subject == subject {
			return u, nil
		}
	}
	if e.store == nil {
		return UserInfo{}, fmt.Errorf("user %q: %w", subject, store.ErrNoUser)
	}
	u, err := e.store.User(ctx, subject)
	if err != nil {
		return UserInfo{}, err
	}
	return storedUser(u, file), nil
}

// CreateUser stores a user with one new key, in effect at once; the key
// is returned this once.
func (e *Engine) CreateUser(ctx context.Context, spec UserSpec, keyName string) (UserInfo, NewKey, error) {
	if err := e.writable(spec.Subject); err != nil {
		return UserInfo{}, NewKey{}, err
	}
	if err := checkUser(spec); err != nil {
		return UserInfo{}, NewKey{}, err
	}
	if err := checkText("keyName", keyName, true); err != nil {
		return UserInfo{}, NewKey{}, err
	}
	sk, nk, err := newKey(keyName)
	if err != nil {
		return UserInfo{}, NewKey{}, err
	}
	u, err := e.store.CreateUser(ctx, store.User{Subject: spec.Subject, Groups: spec.Groups, Attributes: spec.Attributes, Disabled: spec.Disabled, Keys: []store.UserKey{sk}})
	if err != nil {
		return UserInfo{}, NewKey{}, err
	}
	e.usersChanged(ctx)
	return e.withKey(u, nk)
}

// UpdateUser changes a stored user's groups, attributes or disabled flag;
// sessions opened as the user before the change are closed.
func (e *Engine) UpdateUser(ctx context.Context, subject string, p UserPatch) (UserInfo, error) {
	if err := e.writable(subject); err != nil {
		return UserInfo{}, err
	}
	u, err := e.store.UpdateUser(ctx, subject, func(u *store.User) error {
		if p.Groups != nil {
			u.Groups = *p.Groups
		}
		if p.Attributes != nil {
			u.Attributes = *p.Attributes
		}
		if p.Disabled != nil {
			u.Disabled = *p.Disabled
		}
		return checkUser(UserSpec{Subject: u.Subject, Groups: u.Groups, Attributes: u.Attributes})
	})
	if err != nil {
		return UserInfo{}, err
	}
	e.usersChanged(ctx)
	return storedUser(u, e.File()), nil
}

// DeleteUser removes a stored user and its keys; its sessions are closed.
// A stored user whose subject the config file took since can still be
// deleted; the file's identity cannot.
func (e *Engine) DeleteUser(ctx context.Context, subject string) error {
	if err := e.writable(subject); err != nil && !errors.Is(err, ErrConfigUser) {
		return err
	} else if derr := e.store.DeleteUser(ctx, subject); err != nil && errors.Is(derr, store.ErrNoUser) {
		return err // the file's identity, and none stored
	} else if derr != nil {
		return derr
	}
	e.usersChanged(ctx)
	return nil
}

// AddUserKey gives a stored user a new key, returned this once; with
// replaces, the key of that id is revoked in the same change (rotation).
func (e *Engine) AddUserKey(ctx context.Context, subject, name, replaces string) (UserInfo, NewKey, error) {
	if err := e.writable(subject); err != nil {
		return UserInfo{}, NewKey{}, err
	}
	if err := checkText("name", name, true); err != nil {
		return UserInfo{}, NewKey{}, err
	}
	sk, nk, err := newKey(name)
	if err != nil {
		return UserInfo{}, NewKey{}, err
	}
	u, err := e.store.AddUserKey(ctx, subject, sk, replaces)
	if err != nil {
		return UserInfo{}, NewKey{}, err
	}
	e.usersChanged(ctx)
	return e.withKey(u, nk)
}

// RevokeUserKey deletes a stored user's key; the sessions it opened are
// closed.
func (e *Engine) RevokeUserKey(ctx context.Context, subject, id string) (UserInfo, error) {
	if err := e.writable(subject); err != nil {
		return UserInfo{}, err
	}
	u, err := e.store.RevokeUserKey(ctx, subject, id)
	if err != nil {
		return UserInfo{}, err
	}
	e.usersChanged(ctx)
	return storedUser(u, e.File()), nil
}

func (e *Engine) withKey(u store.User, nk NewKey) (UserInfo, NewKey, error) {
	info := storedUser(u, e.File())
	for _, k := range info.Keys {
		if k.ID == nk.ID {
			nk.KeyInfo = k
		}
	}
	return info, nk, nil
}

// writable refuses changes without a store, and to the config file's
// identities.
func (e *Engine) writable(subject string) error {
	if e.store == nil {
		return ErrNoStore
	}
	file := e.File()
	if name, ok := configSubject(file, subject); ok {
		return fmt.Errorf("user %q is %w (%s, %s); change it there, or use another subject", subject, ErrConfigUser, file.Path, name)
	}
	return nil
}

// usersChanged applies a change this process stored: the answer to the
// API call then holds for this replica; the others follow by polling.
func (e *Engine) usersChanged(ctx context.Context) {
	if err := e.syncUsers(ctx, e.File()); err != nil {
		e.log.Warn("a user change is stored but not yet applied; polling the store applies it", "error", err)
	}
}

// syncUsers reads the store's users into the set every authenticator
// shares, leaving out those whose subject file defines, and closes the
// downstream sessions whose key no longer works as it did.
func (e *Engine) syncUsers(ctx context.Context, file *config.File) error {
	e.usersMu.Lock()
	defer e.usersMu.Unlock()
	list, rev, err := e.store.Users(ctx)
	if err != nil {
		return err
	}
	set := make([]auth.User, 0, len(list))
	for _, u := range list {
		if name, taken := configSubject(file, u.Subject); taken {
			e.log.Warn("a stored user's keys are refused: the config file defines its subject", "subject", u.Subject, "key", name)
			continue
		}
		au := auth.User{Subject: u.Subject, Groups: u.Groups, Attributes: u.Attributes, Disabled: u.Disabled}
		for _, k := range u.Keys {
			au.Keys = append(au.Keys, auth.UserKey{ID: k.ID, SHA256: k.SHA256})
		}
		set = append(set, au)
	}
	e.users.Set(set)
	e.usersRev = rev
	if e.host != nil {
		if n := e.host.CloseSessions(e.users.Accepts); n > 0 {
			e.log.Info("closed the sessions of revoked keys, disabled or changed users", "sessions", n)
		}
	}
	return nil
}

// usersPoll looks at the users revision and syncs when it moved (another
// replica, or this one, changed a user).
func (e *Engine) usersPoll() revisionPoll {
	return revisionPoll{
		revision: e.store.UsersRevision, mu: &e.usersMu, seen: &e.usersRev,
		sync: func(ctx context.Context) error { return e.syncUsers(ctx, e.File()) },
		log: pollLog{lost: "the store's users cannot be read; keys stay as they are until they can",
			back: "the store's users can be read again"},
	}
}

// withUsers gives l's authentication the engine's stored users.
func (e *Engine) withUsers(l listener.Config) listener.Config {
	if e.users == nil || (l.Auth == nil && l.AuthToken == "") {
		return l
	}
	a := auth.Config{}
	if l.Auth != nil {
		a = *l.Auth
	}
	a.Users = e.users
	l.Auth = &a
	return l
}

// configSubject reports whether file's listen.auth defines subject, and
// the key block that does.
func configSubject(file *config.File, subject string) (string, bool) {
	l := file.Host.Listen
	if l.Auth != nil {
		for _, k := range l.Auth.Keys {
			if k.Subject == subject {
				return "listen.auth key " + fmt.Sprintf("%q", k.Name), true
			}
		}
	}
	if l.AuthToken != "" && subject == gatewayTokenSubject {
		return "listen.auth_token", true
	}
	return "", false
}

// gatewayTokenSubject is the subject of the auth_token shorthand's key.
const gatewayTokenSubject = "token"

func configUsers(file *config.File) []UserInfo {
	var out []UserInfo
	l := file.Host.Listen
	if l.Auth != nil {
		for _, k := range l.Auth.Keys {
			out = append(out, UserInfo{Subject: k.Subject, Groups: nonNilGroups(k.Groups), Attributes: nonNilAttrs(k.Attributes),
				Source: SourceConfig, Keys: []KeyInfo{{Name: k.Name}}})
		}
	}
	if l.AuthToken != "" {
		out = append(out, UserInfo{Subject: gatewayTokenSubject, Groups: []string{gateway.DefaultAdminGroup}, Attributes: map[string]string{},
			Source: SourceConfig, Keys: []KeyInfo{{Name: "auth_token"}}})
	}
	return out
}

func storedUser(u store.User, file *config.File) UserInfo {
	created, updated := u.Created, u.Updated
	info := UserInfo{Subject: u.Subject, Groups: nonNilGroups(u.Groups), Attributes: nonNilAttrs(u.Attributes), Disabled: u.Disabled,
		Source: SourceStore, Keys: []KeyInfo{}, Version: u.Version, Created: &created, Updated: &updated}
	for _, k := range u.Keys {
		c := k.Created
		info.Keys = append(info.Keys, KeyInfo{ID: k.ID, Name: k.Name, Created: &c})
	}
	if name, taken := configSubject(file, u.Subject); taken {
		info.Problem = fmt.Sprintf("the config file's %s now defines this subject, so these keys are refused; delete this stored user, or take the subject out of the file", name)
	}
	return info
}

func nonNilGroups(g []string) []string {
	if g == nil {
		return []string{}
	}
	return g
}

func nonNilAttrs(a map[string]string) map[string]string {
	if a == nil {
		return map[string]string{}
	}
	return a
}

// keyPrefix starts every stored key, so that a leaked one is recognised
// (by secret scanners too).
const keyPrefix = "mcph_"

// newKey makes a key: 32 random bytes, and an id of 8 more.
func newKey(name string) (store.UserKey, NewKey, error) {
	var secret [32]byte
	var id [8]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return store.UserKey{}, NewKey{}, fmt.Errorf("engine: making a key: %w", err)
	}
	if _, err := rand.Read(id[:]); err != nil {
		return store.UserKey{}, NewKey{}, fmt.Errorf("engine: making a key: %w", err)
	}
	value := keyPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	sk := store.UserKey{ID: hex.EncodeToString(id[:]), Name: name, SHA256: sha256.Sum256([]byte(value))}
	return sk, NewKey{KeyInfo: KeyInfo{ID: sk.ID, Name: name}, Key: value}, nil
}

// checkUser refuses what could not be a caller's identity, or would not
// round-trip through a URL path.
func checkUser(u UserSpec) error {
	switch {
	case u.Subject == "":
		return &UserError{Field: "subject", Detail: "required"}
	case len(u.Subject) > maxSubject:
		return &UserError{Field: "subject", Detail: fmt.Sprintf("longer than %d bytes", maxSubject)}
	case strings.ContainsAny(u.Subject, "/?#%"):
		return &UserError{Field: "subject", Detail: `must not contain "/", "?", "#" or "%" (it is a path segment of /v1/users/{subject})`}
	case u.Subject == "." || u.Subject == "..":
		// A server's settings may use the subject as a file or directory
		// name (caller templates): these two would name another.
		return &UserError{Field: "subject", Detail: `must not be "." or ".." (a server's settings may use it as a file name)`}
	}
	if err := checkText("subject", u.Subject, false); err != nil {
		return err
	}
	if len(u.Groups) > maxGroups {
		return &UserError{Field: "groups", Detail: fmt.Sprintf("more than %d", maxGroups)}
	}
	for i, g := range u.Groups {
		if err := checkText(fmt.Sprintf("groups[%d]", i), g, false); err != nil {
			return err
		}
		if slices.Contains(u.Groups[:i], g) {
			return &UserError{Field: fmt.Sprintf("groups[%d]", i), Detail: fmt.Sprintf("%q is listed twice", g)}
		}
	}
	if len(u.Attributes) > maxAttrs {
		return &UserError{Field: "attributes", Detail: fmt.Sprintf("more than %d", maxAttrs)}
	}
	for k, v := range u.Attributes {
		if err := checkText("attributes", k, false); err != nil {
			return &UserError{Field: "attributes", Detail: "a name " + err.(*UserError).Detail}
		}
		if err := checkText("attributes."+k, v, true); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses empty text (unless it may be), text over
// maxFieldText (subjects have their own limit), invalid UTF-8, control
// characters and space around it.
func checkText(field, s string, mayBeEmpty bool) error {
	switch {
	case s == "" && !mayBeEmpty:
		return &UserError{Field: field, Detail: "must not be empty"}
	case len(s) > maxFieldText && field != "subject":
		return &UserError{Field: field, Detail: fmt.Sprintf("longer than %d bytes", maxFieldText)}
	case !utf8.ValidString(s):
		return &UserError{Field: field, Detail: "not valid UTF-8"}
	case strings.TrimSpace(s) != s:
		return &UserError{Field: field, Detail: "space before or after it"}
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return &UserError{Field: field, Detail: "holds a control character"}
	}
	return nil
}
