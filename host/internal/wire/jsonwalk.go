package wire

import (
	"bytes"

	segjson "github.com/segmentio/encoding/json"
)

// Reading JSON that is known to be valid by walking its bytes, for the
// shortcuts' requests (fastcall.go, fastlist.go) and a stdio server's
// replies (stdiopipe.go): decoding them into maps was an eighth of the
// gateway's CPU per call. What the walk accepts is held to the decoders
// by FuzzParseFastCall, FuzzParseFastList and FuzzPipeReader.

// MaxJSONDepth is the deepest nesting the go-sdk decodes.
const MaxJSONDepth = 1000

// ValidObject reports whether b is one valid JSON object (nothing after
// it) nested no deeper than the go-sdk decodes.
func ValidObject(b []byte) bool {
	if len(b) == 0 || b[0] != '{' || !segjson.Valid(b) {
		return false
	}
	var d Scanner
	d.Feed(b)
	return d.deepest <= MaxJSONDepth
}

// Members returns the values of obj's members named (as written, quotes
// included: a name with an escape matches none) in the order of names, at
// most four, nil for one absent. A member not named, or named twice,
// refuses obj. obj is a valid JSON object.
func Members(obj []byte, names ...string) (vals [4][]byte, ok bool) {
	ok = eachMember(obj, func(name, value []byte) bool {
		for i, n := range names {
			if string(name) == n {
				if vals[i] != nil {
					return false // given twice
				}
				vals[i] = value
				return true
			}
		}
		return false
	})
	return vals, ok
}

// MayHaveMember reports whether obj, a valid JSON object, may have a
// member that a decoder reads as name (given as written, quotes
// included): one written so, or any whose name has an escape.
func MayHaveMember(obj []byte, name string) bool {
	found := false
	eachMember(obj, func(n, _ []byte) bool {
		found = string(n) == name || bytes.IndexByte(n, '\\') >= 0
		return !found
	})
	return found
}

// Scanner follows JSON text fed to it in parts: how deep it is, and how
// deep it went.
type Scanner struct {
	depth, deepest    int
	inString, escaped bool
}

// AtTop reports whether a JSON value may start here.
func (s *Scanner) AtTop() bool { return s.depth == 0 && !s.inString }

func (s *Scanner) Feed(b []byte) {
	for _, c := range b {
		switch {
		case s.inString:
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '"':
				s.inString = false
			}
		case c == '"':
			s.inString = true
		case c == '{' || c == '[':
			if s.depth++; s.depth > s.deepest {
				s.deepest = s.depth
			}
		case c == '}' || c == ']':
			s.depth--
		}
	}
}

// PlainASCII reports whether the inside of a JSON string is printable
// ASCII without escapes: read as written, whatever the decoder.
func PlainASCII(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// eachMember calls f with the name (as written, quotes included) and the
// value of each member of obj, a JSON object known to be valid, until f
// returns false; it reports whether f never did.
func eachMember(obj []byte, f func(name, value []byte) bool) bool {
	i := skipSpace(obj, 1)
	if obj[i] == '}' {
		return true
	}
	for {
		end := skipString(obj, i)
		name := obj[i:end]
		i = skipSpace(obj, skipSpace(obj, end)+1) // past the colon
		end = skipValue(obj, i)
		if !f(name, obj[i:end]) {
			return false
		}
		i = skipSpace(obj, end)
		if obj[i] == '}' {
			return true
		}
		i = skipSpace(obj, i+1) // past the comma
	}
}

// TrimSpace cuts the JSON whitespace around b, which decoders skip.
func TrimSpace(b []byte) []byte {
	b = b[skipSpace(b, 0):]
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index just past the valid JSON value at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[i])) {
		i++
	}
	return i
}
