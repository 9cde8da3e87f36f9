package audit

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/decision"
	"github.com/mcphost-project/mcphost/internal/secrets"
)

// What the host needs to fill Entries from what it has: its caller, the
// name a client sent, the plugins' decisions.

// CallerOf is the audit line's caller of c.
func CallerOf(c abi.Caller) Caller {
	return Caller{Subject: c.Subject, Groups: c.Groups, Method: c.AuthMethod, Session: c.SessionID, Client: c.ClientName}
}

// BoundedName keeps a name a client sent bounded (256 bytes) and valid
// UTF-8 in the log.
func BoundedName(name string) string {
	if len(name) > 256 {
		name = name[:256]
	}
	return strings.ToValidUTF8(name, "\uFFFD")
}

// MaskDecision masks what a plugin's decision says (its reason, its error,
// the paths it changed) as everything else that leaves the process is: a
// reason may quote a credential, and a path name a key that a later policy
// masks. The audit log and the traces both take decisions masked.
func MaskDecision(d decision.Decision) decision.Decision {
	d.Reason, d.Error = secrets.MaskText(d.Reason), secrets.MaskText(d.Error)
	if len(d.Paths) > 0 {
		paths := make([]string, len(d.Paths))
		for i, p := range d.Paths {
			paths[i] = secrets.MaskText(p)
		}
		d.Paths = paths
	}
	return d
}

// ListingChanges remembers, per caller, the tools policies hid from the
// last listing written to the audit log, so that a listing is written only
// when that changes.
type ListingChanges struct {
	mu   sync.Mutex
	last map[string][32]byte // caller key -> digest of the decisions last written
}

// maxListingCallers bounds ListingChanges' memory; past it, it starts
// over (and the next listing that hides tools from each caller is written
// again).
const maxListingCallers = 10000

// Changed reports whether steps differ from what was last written for
// callerKey (nothing hidden, for a caller not seen yet), and remembers
// them.
func (l *ListingChanges) Changed(callerKey string, steps []decision.Decision) bool {
	var sum [32]byte
	if len(steps) > 0 {
		b, _ := json.Marshal(steps)
		sum = sha256.Sum256(b)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last[callerKey] == sum {
		return false
	}
	if l.last == nil || len(l.last) >= maxListingCallers {
		l.last = map[string][32]byte{}
	}
	l.last[callerKey] = sum
	return true
}
