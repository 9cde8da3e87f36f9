// Package secrets holds the credential patterns that mcphost masks: the
// ones builtin:redact applies to tool results (Credentials), and a masker
// for text mcphost itself shows operators, such as an upstream's stderr
// (Mask), which adds patterns for credentials written in configuration
// form (URL passwords, key=value pairs, bearer tokens); and a masker of
// the credentials in URLs (MaskURLs: userinfo passwords, query and fragment
// parameters), which /status and the log output pass through.
//
// It is plain Go over regexp so that both the host and the built-in Wasm
// module (filters/policies) can use it.
package secrets

import (
	"regexp"
	"strings"
	"sync"
)

// Pattern is one kind of secret.
type Pattern struct {
	Name string
	RE   *regexp.Regexp
	// Keywords: the text must contain one of these for RE to run; nil:
	// always run. They keep the common case (no secret) cheap.
	Keywords []string
}

// MayMatch reports whether p's expression is worth running on s: s holds
// one of its keywords, or it has none.
func (p Pattern) MayMatch(s string) bool {
	if p.Keywords == nil {
		return true
	}
	for _, w := range p.Keywords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// Credentials are the credentials builtin:redact masks by default. Order
// matters where kinds overlap: Anthropic keys before OpenAI's, which share
// "sk-".
//
// They are compiled on first use, not at package init: every instance of
// the built-in module runs the init of every package in it, and compiling
// these (counted repetitions expand to large programs) was most of the
// start of an instance, whichever policy it runs.
var Credentials = sync.OnceValue(func() []Pattern {
	return []Pattern{
		{"github_token", regexp.MustCompile(`\b(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{36,255}\b`), []string{"ghp_", "gho_", "ghs_", "ghu_", "ghr_"}},
		{"github_pat", regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{22,255}\b`), []string{"github_pat_"}},
		{"aws_access_key_id", regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`), []string{"AKIA", "ASIA", "ABIA", "ACCA"}},
		{"slack_token", regexp.MustCompile(`\bxox[baprs]-[A-Za-z0-9-]{10,}`), []string{"xox"}},
		{"stripe_key", regexp.MustCompile(`\b(?:sk|rk)_live_[A-Za-z0-9]{16,}\b`), []string{"_live_"}},
		{"anthropic_key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`), []string{"sk-ant-"}},
		{"openai_key", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), []string{"sk-"}},
		{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), []string{"eyJ"}},
		{"private_key", regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----`), []string{"PRIVATE KEY-----"}},
	}
})

// configPatterns are credentials as configuration and logs write them.
// Each masks only its last group (the secret), keeping what names it.
var configPatterns = sync.OnceValue(func() []Pattern {
	return []Pattern{
		// scheme://user:password@host: the password.
		{"url_password", regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:([^\s@]+)@`), []string{"://"}},
		// An authorization header's credentials.
		{"bearer_token", regexp.MustCompile(`(?i)\b(?:bearer|basic)\s+([A-Za-z0-9._~+/=-]{8,})`), nil},
		// name=value, name: value and "name": "value" where the name says
		// it holds a credential (query strings and connection strings too).
		{"credential", regexp.MustCompile(`(?i)[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|auth)[A-Za-z0-9_.-]*"?\s*[=:]\s*"?([^\s"'&,;]+)`), nil},
	}
})

// pemBegin and pemEnd delimit a PEM private key, which spans lines.
var pemBegin = regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----`)

// Mask returns s with every credential of Credentials and of the
// configuration patterns replaced by [REDACTED:kind]. A PEM private key
// is masked from its BEGIN line to its END line, or to the end of s when
// s holds only its start.
func Mask(s string) string {
	for _, p := range Credentials() {
		if !p.MayMatch(s) {
			continue
		}
		s = p.RE.ReplaceAllLiteralString(s, "[REDACTED:"+p.Name+"]")
	}
	if loc := pemBegin.FindStringIndex(s); loc != nil { // a key cut off by the end of s
		s = s[:loc[0]] + "[REDACTED:private_key]"
	}
	for _, p := range configPatterns() {
		if !p.MayMatch(s) {
			continue
		}
		s = replaceGroup(p.RE, s, "[REDACTED:"+p.Name+"]")
	}
	return s
}

// replaceGroup replaces the last group of each match of re in s with mask.
func replaceGroup(re *regexp.Regexp, s, mask string) string {
	matches := re.FindAllStringSubmatchIndex(s, -1)
	if matches == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		g0, g1 := m[len(m)-2], m[len(m)-1]
		if g0 < 0 {
			continue
		}
		b.WriteString(s[last:g0])
		b.WriteString(mask)
		last = g1
	}
	b.WriteString(s[last:])
	return b.String()
}

// LineMasker masks a stream of lines, such as a process's stderr, where a
// PEM private key spans several: from a BEGIN line to its END line, every
// line is masked whole. It is not safe for concurrent use.
type LineMasker struct {
	inKey bool
}

// Line returns one line masked.
func (m *LineMasker) Line(s string) string {
	if m.inKey {
		if strings.Contains(s, "PRIVATE KEY-----") && strings.Contains(s, "-----END ") {
			m.inKey = false
		}
		return "[REDACTED:private_key]"
	}
	if loc := pemBegin.FindStringIndex(s); loc != nil && !strings.Contains(s[loc[1]:], "-----END ") {
		m.inKey = true
	}
	return Mask(s)
}
