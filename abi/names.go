package abi

// The one rule for tool (and prompt) names, used by the configuration, the
// host's naming and the check of what plugins return.

// MaxToolNameLength is the longest exposed name: MCP asks clients to accept
// tool names of 1 to 128 characters. A model API with a lower limit (some
// take 64) is the concern of whatever hands tools to it.
const MaxToolNameLength = 128

// ValidToolName reports whether name is 1 to MaxToolNameLength characters
// of [A-Za-z0-9_-] starting with a letter or '_': what MCP clients and LLM
// APIs accept.
func ValidToolName(name string) bool {
	if name == "" || len(name) > MaxToolNameLength {
		return false
	}
	if c := name[0]; c != '_' && !isLetter(c) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if !IsToolNameByte(name[i]) {
			return false
		}
	}
	return true
}

// IsToolNameByte reports whether c may appear in a tool name.
func IsToolNameByte(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
