package host

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

// maxClientMessage bounds a denial or policy failure message, in bytes.
const maxClientMessage = 300

// clientMessager is implemented by policy errors that know what a client
// may be told (plugins.PolicyError).
type clientMessager interface{ ClientMessage() string }

// policyMessage returns what a client is told about a policy's failure.
func policyMessage(err error) string {
	var cm clientMessager
	if errors.As(err, &cm) {
		return cleanText(cm.ClientMessage())
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return cleanText(first)
}

// cleanText makes s one line of printable UTF-8 of at most
// maxClientMessage bytes: invalid bytes become U+FFFD, other unprintable
// characters (line breaks, tabs, escapes, bidi controls) become spaces, and
// runs of spaces are collapsed.
func cleanText(s string) string {
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
		if b.Len()+utf8.RuneLen(r) > maxClientMessage-len("…") {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// listingError is a listing a policy failed to produce: Error is what a
// client may be told, the cause stays for errors.Is and the log.
type listingError struct {
	msg string
	err error
}

func (e *listingError) Error() string { return e.msg }
func (e *listingError) Unwrap() error { return e.err }
