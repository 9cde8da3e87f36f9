package auth

import (
	"crypto/sha256"
	"sync/atomic"

	"github.com/mcphost-project/mcphost/abi"
)

// Users is the set of identities added at run time (the store's users,
// managed through the admin API), each with its API keys by SHA-256. The
// engine replaces the set whole (Set) when the store changes; every
// Authenticator built with it (Config.Users) sees the change at once,
// without being rebuilt. A nil *Users holds no one. Safe for concurrent
// use.
//
// An identity of a stored key has Method abi.AuthKey, as a listen.auth key
// does, but is never an administrator: admin rights come from the config
// file alone.
type Users struct{ cur atomic.Pointer[userSet] }

// User is one identity of a Users set.
type User struct {
	Subject    string
	Groups     []string
	Attributes map[string]string
	Disabled   bool // its keys are refused
	Keys       []UserKey
}

// UserKey is one API key of a User, by its digest.
type UserKey struct {
	ID     string
	SHA256 [32]byte
}

type userSet struct {
	byDigest map[[32]byte]*storedKey
	byID     map[string]*storedKey
}

type storedKey struct {
	id       string
	disabled bool
	identity *Identity // shared by every match: identities are not changed once made
}

// Set replaces the set with users.
func (u *Users) Set(users []User) {
	set := &userSet{byDigest: map[[32]byte]*storedKey{}, byID: map[string]*storedKey{}}
	for _, usr := range users {
		for _, k := range usr.Keys {
			sk := &storedKey{id: k.ID, disabled: usr.Disabled,
				identity: &Identity{Subject: usr.Subject, Groups: usr.Groups, Attributes: usr.Attributes, Method: abi.AuthKey, storedKey: k.ID}}
			set.byDigest[k.SHA256] = sk
			set.byID[k.ID] = sk
		}
	}
	u.cur.Store(set)
}

// match returns the stored key token is, or nil. The map is keyed by the
// token's SHA-256, which a caller cannot choose, so its lookup time tells
// nothing about the keys.
func (u *Users) match(token string) *storedKey {
	if u == nil {
		return nil
	}
	set := u.cur.Load()
	if set == nil || len(set.byDigest) == 0 {
		return nil
	}
	return set.byDigest[sha256.Sum256([]byte(token))]
}

// Accepts reports whether id, an identity of a stored key, would still
// authenticate as it is: its key is in the set, its user is not disabled,
// and the user's subject, groups and attributes are those id has. It
// reports true for any identity not of a stored key (those are not the
// set's to judge).
func (u *Users) Accepts(id *Identity) bool {
	if id == nil || id.storedKey == "" {
		return true
	}
	if u == nil {
		return false
	}
	set := u.cur.Load()
	if set == nil {
		return false
	}
	sk := set.byID[id.storedKey]
	return sk != nil && !sk.disabled && sk.identity.Key() == id.Key()
}

// StoredKey is the id of the stored key (Users) the identity
// authenticated with; "" for any other credential.
func (id *Identity) StoredKey() string {
	if id == nil {
		return ""
	}
	return id.storedKey
}
