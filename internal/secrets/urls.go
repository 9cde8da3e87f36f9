package secrets

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Masking credentials in URLs. Upstream URLs carry secrets in their
// userinfo and, often, their query (?token=..., ?api_key=..., signed URLs'
// sig=...). They reach /status and the log inside error messages (Go's
// url.Error masks the userinfo password, never the query), so /status and
// the log output both pass through MaskURLs, which masks both.

// redactedValue replaces a masked secret, as url.URL.Redacted does.
const redactedValue = "xxxxx"

// MaskURLs returns text with every URL in it (scheme://...) masked:
// the userinfo password and the values of query and fragment parameters
// whose names look like credentials (token, key, secret, password, sig,
// code, auth, ...; case-insensitive) become "xxxxx". It reads URLs inside
// JSON text too (a query's & escaped as \u0026). Text without "://" is
// returned as is, without copying.
func MaskURLs(text string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		// The scheme: letters, digits, + - . before "://".
		s := i
		for s > 0 && isSchemeByte(rest[s-1]) {
			s--
		}
		end := i + 3 + urlLen(rest[i+3:])
		b.WriteString(rest[:s])
		if s == i { // no scheme: not a URL
			b.WriteString(rest[i:end])
		} else {
			redactURL(&b, rest[s:i+3], rest[i+3:end])
		}
		rest = rest[end:]
	}
	b.WriteString(rest)
	return b.String()
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// urlLen is how far a URL runs in s: up to white space, a quote, angle
// brackets or a backslash that is not the start of \u0026.
func urlLen(s string) int {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r', '"', '\'', '<', '>', '`':
			return i
		case '\\':
			if !strings.HasPrefix(s[i:], `\u0026`) {
				return i
			}
		}
	}
	return len(s)
}

// redactURL writes scheme (with its "://") and the rest of one URL, masked.
func redactURL(b *strings.Builder, scheme, rest string) {
	b.WriteString(scheme)
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	auth := rest[:authEnd]
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		user, _, hasPass := strings.Cut(auth[:at], ":")
		b.WriteString(user)
		if hasPass {
			b.WriteString(":" + redactedValue)
		}
		b.WriteString(auth[at:])
	} else {
		b.WriteString(auth)
	}
	rest = rest[authEnd:]
	// The path as is, then the query and the fragment parameter by parameter.
	q := strings.IndexAny(rest, "?#")
	if q < 0 {
		b.WriteString(rest)
		return
	}
	b.WriteString(rest[:q])
	rest = rest[q:]
	for len(rest) > 0 {
		// rest starts with a separator: ?, #, & or \u0026.
		sepLen := 1
		if strings.HasPrefix(rest, `\u0026`) {
			sepLen = len(`\u0026`)
		}
		b.WriteString(rest[:sepLen])
		rest = rest[sepLen:]
		n := paramLen(rest)
		redactParam(b, rest[:n])
		rest = rest[n:]
	}
}

// paramLen is the length of the parameter at the start of s.
func paramLen(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '&', '#', '?':
			return i
		case '\\':
			if strings.HasPrefix(s[i:], `\u0026`) {
				return i
			}
		}
	}
	return len(s)
}

func redactParam(b *strings.Builder, p string) {
	name, _, hasValue := strings.Cut(p, "=")
	if !hasValue || !isCredentialName(name) {
		b.WriteString(p)
		return
	}
	b.WriteString(name + "=" + redactedValue)
}

// credentialNames are parameter names that are secrets whatever else they
// say; credentialParts are parts that make any name one (client_secret,
// X-Amz-Signature, refresh_token).
var (
	credentialNames = []string{"key", "sig", "auth", "code", "pass", "pwd", "jwt", "session", "sessionid", "ticket"}
	credentialParts = []string{"token", "secret", "password", "passwd", "apikey", "api_key", "api-key", "signature", "credential", "auth", "private"}
)

// MaskText is text as mcphost lets it out of the process (errors it
// returns, logs, audit lines, spans): Mask's credentials and the secrets of
// URLs masked.
func MaskText(text string) string { return MaskURLs(Mask(text)) }

// IsCredentialName reports whether name (a query parameter's, an
// environment variable's, a header's) looks like it holds a credential, by
// the rule that MaskURLs applies to query parameters.
func IsCredentialName(name string) bool { return isCredentialName(name) }

// isCredentialName reports whether a query parameter's name looks like a
// credential. Names are compared case-insensitively after percent-decoding
// (%74oken is token); a name whose last word is key (access_key,
// Subscription-Key, x.key) is one, a name merely ending in "key" (monkey)
// is not.
func isCredentialName(name string) bool {
	n := strings.ToLower(percentDecode(name))
	for _, c := range credentialNames {
		if n == c {
			return true
		}
	}
	for _, c := range credentialParts {
		if strings.Contains(n, c) {
			return true
		}
	}
	for _, sep := range []string{"_key", "-key", ".key"} {
		if strings.HasSuffix(n, sep) {
			return true
		}
	}
	return false
}

// percentDecode decodes the %XX escapes of s, leaving malformed ones as
// they are. (Not net/url, which the built-in Wasm module, also linking
// this package, would then carry.)
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// URLMaskingWriter returns a writer that passes each write through
// MaskURLs: log output, written a line per call by hclog.
func URLMaskingWriter(w io.Writer) io.Writer { return &urlMaskingWriter{w: w} }

type urlMaskingWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *urlMaskingWriter) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte("://")) {
		return r.w.Write(p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := io.WriteString(r.w, MaskURLs(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
