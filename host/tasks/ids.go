package tasks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// A task id as mcphost gives it to a client:
//
//	mcpt1.<server>.<task>.<tool>.<mac>
//
// each part unpadded base64url: the upstream server's name (empty for a
// task mcphost runs itself), the task's id there (or in the Runner), the
// tool's exposed name (empty for mcphost's own), and the first 18 bytes of
// HMAC-SHA256 over the version, the owner, the server, the task and the
// tool, under the host's key. The owner is the caller's
// identity key (the session's id for a caller without one), so another
// caller's request cannot verify it and is told the task does not exist,
// as for any id it did not get.

const idPrefix = "mcpt1."

// macLen is how much of the MAC an id carries (144 bits).
const macLen = 18

// maxIDLen bounds an id mcphost reads; a longer one was not made here.
const maxIDLen = 1024

// Ref is what a task id names.
type Ref struct {
	Server string // the upstream's name; "" for a task mcphost runs
	ID     string // the task's id on the upstream, or in the Runner
	Tool   string // the tool as the caller called it (upstream tasks: for the result hooks)
}

// IDs makes and checks task ids under one key.
type IDs struct{ key []byte }

// NewIDs returns the id maker for key; an empty key gets a random one (the
// ids then mean nothing to another process).
func NewIDs(key []byte) *IDs {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			panic("tasks: no randomness: " + err.Error())
		}
	}
	return &IDs{key: append([]byte(nil), key...)}
}

// ErrUnknownTask says a task id names no task of the caller's: made
// elsewhere, for another caller, altered, or of a task that is gone.
var ErrUnknownTask = errors.New("tasks: no such task")

var b64 = base64.RawURLEncoding

// Encode returns the id of r for owner.
func (k *IDs) Encode(owner string, r Ref) string {
	var b strings.Builder
	b.WriteString(idPrefix)
	b.WriteString(b64.EncodeToString([]byte(r.Server)))
	b.WriteByte('.')
	b.WriteString(b64.EncodeToString([]byte(r.ID)))
	b.WriteByte('.')
	b.WriteString(b64.EncodeToString([]byte(r.Tool)))
	b.WriteByte('.')
	b.WriteString(b64.EncodeToString(k.mac(owner, r)))
	return b.String()
}

// Decode checks id against owner and returns what it names; any id that
// was not made by Encode for owner under this key is ErrUnknownTask.
func (k *IDs) Decode(owner, id string) (Ref, error) {
	if len(id) > maxIDLen || !strings.HasPrefix(id, idPrefix) {
		return Ref{}, ErrUnknownTask
	}
	parts := strings.Split(id[len(idPrefix):], ".")
	if len(parts) != 4 {
		return Ref{}, ErrUnknownTask
	}
	server, err1 := b64.DecodeString(parts[0])
	task, err2 := b64.DecodeString(parts[1])
	tool, err3 := b64.DecodeString(parts[2])
	mac, err4 := b64.DecodeString(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || len(task) == 0 {
		return Ref{}, ErrUnknownTask
	}
	r := Ref{Server: string(server), ID: string(task), Tool: string(tool)}
	if !hmac.Equal(mac, k.mac(owner, r)) {
		return Ref{}, ErrUnknownTask
	}
	return r, nil
}

// mac is the first macLen bytes of the HMAC of r for owner; each part is
// length-prefixed so that no two (owner, server, id) share an input.
func (k *IDs) mac(owner string, r Ref) []byte {
	m := hmac.New(sha256.New, k.key)
	for _, s := range []string{"mcpt1", owner, r.Server, r.ID, r.Tool} {
		var n [4]byte
		l := len(s)
		n[0], n[1], n[2], n[3] = byte(l>>24), byte(l>>16), byte(l>>8), byte(l)
		m.Write(n[:])
		m.Write([]byte(s))
	}
	return m.Sum(nil)[:macLen]
}
