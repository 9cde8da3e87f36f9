package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
)

// hashLen is the number of hex digits of the stable suffix that keeps cut or
// colliding names unique. 8 digits (32 bits) keeps names short while making
// an accidental second collision in one catalog vanishingly rare.
const hashLen = 8

// ValidName reports whether s is a valid tool name (abi.ValidToolName)
// within max characters.
func ValidName(s string, max int) bool {
	return len(s) <= max && abi.ValidToolName(s)
}

// Sanitize maps every byte outside [A-Za-z0-9_-] to '_', folding runs of
// replaced bytes (a multi-byte rune, "a.b" or "a b") into one.
func Sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	replaced := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if abi.IsToolNameByte(c) {
			b.WriteByte(c)
			replaced = false
			continue
		}
		if !replaced {
			b.WriteByte('_')
			replaced = true
		}
	}
	return b.String()
}

// nameHash is the stable suffix for (server, tool): the same pair always gets
// the same hash, so names survive restarts and config reorderings.
func nameHash(server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// NameBuilder turns (server, tool) pairs into exposed names under one
// ToolsConfig. It is the only place names are made; routing never parses
// them back.
type NameBuilder struct {
	sep    string
	Max    int
	prefix bool
}

func NewNameBuilder(c ToolsConfig) NameBuilder {
	max := c.MaxNameLength
	if max <= 0 {
		max = DefaultMaxNameLength
	}
	// The shortest hashed name is "_x" + sep + "y" + "_" + hash; never let
	// the budget go below what that needs.
	sep := Sanitize(c.Separator)
	if min := 4 + len(sep) + hashLen; max < min {
		max = min
	}
	return NameBuilder{sep: sep, Max: max, prefix: c.Prefix != PrefixNever}
}

// plain is the name before any hashing: sanitised, prefixed when configured,
// and starting with a letter or underscore.
func (nb NameBuilder) plain(server, tool string) string {
	name := Sanitize(tool)
	if nb.prefix {
		name = Sanitize(server) + nb.sep + name
	}
	return leadingLetter(name)
}

func leadingLetter(name string) string {
	if name == "" || !abi.ValidToolName(name[:1]) { // a digit or '-' first
		return "_" + name
	}
	return name
}

// Build returns the exposed name of (server, tool): the plain name when it
// fits, else a cut name with a stable hash suffix.
func (nb NameBuilder) Build(server, tool string) string {
	if name := nb.plain(server, tool); len(name) <= nb.Max {
		return name
	}
	return nb.Hashed(server, tool)
}

// Hashed always appends the stable hash, cutting the server and tool parts
// in proportion to their lengths so both stay recognisable.
func (nb NameBuilder) Hashed(server, tool string) string {
	suffix := "_" + nameHash(server, tool)
	t := Sanitize(tool)
	if !nb.prefix {
		budget := nb.Max - len(suffix)
		return leadingLetter(cut(t, budget-1)) + suffix // -1 leaves room for a leading "_"
	}
	s := Sanitize(server)
	budget := nb.Max - len(suffix) - len(nb.sep) - 1 // -1: room for a leading "_"
	sl, tl := len(s), len(t)
	if excess := sl + tl - budget; excess > 0 {
		// Each part gives up characters in proportion to its length, so a
		// short server name survives a long tool name. budget >= 2 (see
		// newNameBuilder), so a non-empty tool part always keeps one.
		sl -= excess * sl / (sl + tl)
		tl = min(budget-sl, len(t))
		if tl < 1 && len(t) > 0 {
			tl, sl = 1, budget-1
		}
		sl = min(sl, len(s))
	}
	return leadingLetter(s[:sl]+nb.sep+t[:tl]) + suffix
}

func cut(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}
