package wire

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What a client is told when a policy denies or fails: one line of
// printable text, bounded, that names the policy and the reason. A
// policy's own text (a guest's deny reason or error message) is outside
// input: it may hold raw bytes, control characters, terminal escapes or a
// Wasm stack trace. The full error goes to the log at debug.

// MaxClientMessage bounds a denial or policy failure message, in bytes.
const MaxClientMessage = 300

// clientMessager is implemented by policy errors that know what a client
// may be told (plugins.PolicyError).
type clientMessager interface{ ClientMessage() string }

// PolicyMessage returns what a client is told about a policy's failure.
func PolicyMessage(err error) string {
	var cm clientMessager
	if errors.As(err, &cm) {
		return CleanText(cm.ClientMessage())
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return CleanText(first)
}

// CleanText makes s one line of printable UTF-8 of at most
// maxClientMessage bytes: invalid bytes become U+FFFD, other unprintable
// characters (line breaks, tabs, escapes, bidi controls) become spaces, and
// runs of spaces are collapsed.
func CleanText(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > MaxClientMessage-len("…") {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ListingError is a listing a policy failed to produce: Error is what a
// client may be told, the cause stays for errors.Is and the log.
type ListingError struct {
	Msg string
	Err error
}

func (e *ListingError) Error() string { return e.Msg }
func (e *ListingError) Unwrap() error { return e.Err }
