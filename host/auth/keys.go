package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
)

// Key is one static API key: a client that presents it as a bearer token
// is Subject, in Groups, with Attributes.
type Key struct {
	Name       string   // the config label, for errors and logs
	SHA256     [32]byte // of the key itself; the key is never kept
	Subject    string
	Groups     []string
	Attributes map[string]string
}

// KeyFromValue is a Key for value (hashed at once).
func KeyFromValue(name, value string) Key {
	return Key{Name: name, SHA256: sha256.Sum256([]byte(value))}
}

// ParseSHA256 decodes a key's digest as written in config: 64 hex digits,
// optionally prefixed "sha256:".
func ParseSHA256(s string) ([32]byte, error) {
	var d [32]byte
	h := strings.TrimPrefix(strings.TrimSpace(s), "sha256:")
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != len(d) {
		// The value is not echoed: it may be the key itself, set by mistake.
		return d, fmt.Errorf("this %d-character value is not a SHA-256 digest: want 64 hex digits, like the output of `printf %%s \"$KEY\" | sha256sum` (or set value = the key instead of sha256)", len(s))
	}
	copy(d[:], b)
	return d, nil
}

// MinKeyBytes is the shortest key accepted as a value: shorter ones are
// guessable.
const MinKeyBytes = 16

// keySet finds the key a token is, in time that does not depend on which
// key matched or on how much of a digest did.
type keySet []Key

func (ks keySet) match(token string) *Key {
	if len(ks) == 0 {
		return nil
	}
	d := sha256.Sum256([]byte(token))
	found := -1
	for i := range ks {
		if subtle.ConstantTimeCompare(d[:], ks[i].SHA256[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil
	}
	return &ks[found]
}

func (k *Key) identity() *Identity {
	return &Identity{Subject: k.Subject, Groups: k.Groups, Attributes: k.Attributes, Method: abi.AuthKey}
}
