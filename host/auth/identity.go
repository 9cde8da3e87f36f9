// Package auth authenticates mcphost's downstream HTTP clients: static API
// keys, each an identity, and OAuth 2.1 access tokens (JWTs) validated as
// the MCP authorization spec asks of a resource server (RFC 9728 metadata,
// audience binding, signature from the issuer's JWKS, scopes). An
// Authenticator turns a request into an Identity, or into the 401 or 403
// the client must see.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/abi"
)

// Identity is an authenticated caller.
type Identity struct {
	Subject    string
	Groups     []string
	Attributes map[string]string
	Method     string // abi.AuthKey, abi.AuthOAuth or abi.AuthConfig

	// bearer is the OAuth access token the caller presented, kept for
	// token exchange (RFC 8693) only; never logged, shown or sent upstream.
	bearer       string
	bearerExpiry time.Time
	// storedKey is the id of the stored key (Users) it authenticated
	// with; "" for any other credential.
	storedKey string
}

// Bearer is the OAuth access token the caller authenticated with and its
// expiry; "" for a caller with an API key or from config. It is for
// exchanging at the issuer that issued it, and nothing else.
func (id *Identity) Bearer() (string, time.Time) {
	if id == nil {
		return "", time.Time{}
	}
	return id.bearer, id.bearerExpiry
}

// Key is what binds a session: the method, the subject and a digest of
// the groups and attributes. Two requests with the same key are the same
// caller with the same rights: a weaker key with the same subject, or a
// token issued after the subject left a group, does not get a session
// opened with more.
func (id *Identity) Key() string {
	if id == nil {
		return ""
	}
	h := sha256.New()
	groups := slices.Clone(id.Groups)
	slices.Sort(groups)
	for _, g := range groups {
		fmt.Fprintf(h, "g%d:%s", len(g), g)
	}
	for _, k := range slices.Sorted(maps.Keys(id.Attributes)) {
		v := id.Attributes[k]
		fmt.Fprintf(h, "a%d:%s%d:%s", len(k), k, len(v), v)
	}
	return id.Method + ":" + id.Subject + "#" + hex.EncodeToString(h.Sum(nil)[:8])
}

// InAny reports whether the identity is in one of groups.
func (id *Identity) InAny(groups []string) bool {
	if id == nil {
		return false
	}
	for _, g := range id.Groups {
		for _, want := range groups {
			if g == want {
				return true
			}
		}
	}
	return false
}

// Fill sets the identity fields of c (all of them cleared for nil).
func (id *Identity) Fill(c *abi.Caller) {
	c.Subject, c.Groups, c.Attributes, c.AuthMethod, c.Identity = "", nil, nil, "", ""
	if id == nil {
		return
	}
	c.Subject, c.Identity = id.Subject, id.Subject
	c.Groups, c.Attributes, c.AuthMethod = id.Groups, id.Attributes, id.Method
}

// String is for logs: the method and subject, never a credential.
func (id *Identity) String() string {
	if id == nil {
		return "anonymous"
	}
	var b strings.Builder
	b.WriteString(id.Subject)
	b.WriteString(" (")
	b.WriteString(id.Method)
	b.WriteString(")")
	return b.String()
}

type identityKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity NewContext stored in ctx, or nil.
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}
