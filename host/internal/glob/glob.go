// Package glob matches the globs of quotas and toolsets ("read_*") over
// server and tool names: a leaf, so that both read them the same.
package glob

// Match reports whether the glob pattern, in which "*" matches any run of
// characters, matches s: the usual two-pointer walk that goes back only to
// the last star, so it takes at most len(pattern)*len(s) steps.
func Match(pattern, s string) bool {
	p, i := 0, 0
	star, from := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, from = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			from++
			i = from
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
