package wire

// LogLevels are MCP's log levels (RFC 5424's, as the spec names them), most
// verbose first.
var LogLevels = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogRank is level's place in LogLevels, and false for a level MCP does not
// define.
func LogRank[L ~string](level L) (int, bool) {
	for i, l := range LogLevels {
		if l == string(level) {
			return i, true
		}
	}
	return 0, false
}
