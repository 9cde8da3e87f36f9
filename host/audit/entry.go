// Package audit is mcphost's audit log: one JSON line per tools/call (and,
// when asked, per change of the tools a policy hides from a caller's
// listing) saying who called what, what each policy decided, how long it
// took and how it ended. A Log writes the lines off the call's path, to a
// file rotated by size (or stdout) and to the store, where the admin API
// queries them; docs/audit.md describes the line field by field.
//
// The package knows no MCP and no plugin: the host fills Entries (their
// decisions are abi/decision's, which the plugin chain makes), the engine
// wires the Log to the store and the redact policy.
package audit

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcphost-project/mcphost/abi/decision"
)

// Kinds of entry.
const (
	KindCall    = "call"    // a tools/call
	KindListing = "listing" // a caller's tool listing, with the tools policies hid
	KindRequest = "request" // a request of another method (prompts/get, resources/read, ...): its admission
)

// Entry is one audit line. Its JSON is the line, and what GET /v1/audit
// answers for it.
type Entry struct {
	ID   string    `json:"id"`   // unique, and in time order when compared as strings (NewID)
	Time time.Time `json:"time"` // when the call arrived, UTC
	// Kind is KindCall, KindListing or KindRequest; left out of a call's
	// line.
	Kind string `json:"kind,omitempty"`
	// Method is a request's MCP method (KindRequest).
	Method string `json:"method,omitempty"`
	Caller Caller `json:"caller"`
	// Name is the exposed tool name the client called (for a request, the
	// prompt's name, the resource's URI, ...); Server and Tool where it
	// routes ("" when it routes nowhere).
	Name   string `json:"name"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Decisions are what each plugin that ran decided, in chain order,
	// tool_call hooks first.
	Decisions []decision.Decision `json:"decisions"`
	// Outcome is how the call ended: host.CallOK, CallDenied, ... (the
	// metrics' outcomes); "denied" for a listing.
	Outcome string `json:"outcome"`
	// Quota names the quota that refused the call (outcome "quota").
	Quota         string  `json:"quota,omitempty"`
	DurationMs    float64 `json:"durationMs"`    // arrival to answer
	UpstreamMs    float64 `json:"upstreamMs"`    // waiting on the server
	PolicyMs      float64 `json:"policyMs"`      // in the tool_call and tool_result hooks
	RequestBytes  int     `json:"requestBytes"`  // the arguments as the client sent them
	ResponseBytes int     `json:"responseBytes"` // the result as the client got it
	// Arguments and Result are recorded only when the audit block asks,
	// after the redact policy masked them.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

// Caller is who called: the identity authentication established and the
// session.
type Caller struct {
	Subject string   `json:"subject"`
	Groups  []string `json:"groups"`
	Method  string   `json:"method"`  // how they authenticated: key, oauth, config ("" for nobody)
	Session string   `json:"session"` // the downstream MCP session
	Client  string   `json:"client"`  // the client's name, as it introduced itself
}

// idSeed makes IDs of different processes differ; idSeq those of one.
var (
	idSeed = func() uint32 {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return binary.BigEndian.Uint32(b[:])
	}()
	idSeq atomic.Uint32
)

// IDLen is the length of an ID.
const IDLen = 32

// NewID returns a new entry ID for time t: 32 lowercase hex digits, the
// Unix nanoseconds first, so that IDs compare as their times do (in any
// collation: the store orders by them), then a number of this process and
// a sequence number, so that two entries never share one.
func NewID(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(t.UnixNano()))
	binary.BigEndian.PutUint32(b[8:12], idSeed)
	binary.BigEndian.PutUint32(b[12:16], idSeq.Add(1))
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id has the form NewID gives.
func ValidID(id string) bool {
	if len(id) != IDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ErrLine is returned by Decode for what is not an audit line.
var ErrLine = errors.New("audit: not an audit line")

// Decode reads one audit line. Members it does not know are ignored (a
// newer mcphost may add some); a line that is not one JSON object, or
// lacks an id or a time, is ErrLine.
func Decode(line []byte) (*Entry, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrLine)
	}
	var e Entry
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLine, err)
	}
	if len(bytes.TrimSpace(line[dec.InputOffset():])) > 0 {
		return nil, fmt.Errorf("%w: text after the JSON object", ErrLine)
	}
	if e.ID == "" || e.Time.IsZero() {
		return nil, fmt.Errorf("%w: no id or time", ErrLine)
	}
	return &e, nil
}

// Subject is the caller's subject, for the store's index.
func (e *Entry) Subject() string { return e.Caller.Subject }

// Millis returns d in milliseconds, to the microsecond, as an Entry holds
// durations.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
