package clientconfig

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/mcphost-project/mcphost/internal/secrets"
)

// The clients' own variables: ${VAR} and ${VAR:-default} (Claude Code),
// ${env:VAR} (VS Code, Cursor), ${input:ID} (VS Code's prompted inputs),
// ${userHome} and ${workspaceFolder}. Each becomes a reference to an
// environment variable, read when mcphost runs the definition.
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expand turns s, the value of where in server's definition, into a Value.
func (r *reader) expand(server, where, s string) Value {
	var v Value
	text := v.addText
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		text(s[:i])
		inner := s[i+2 : i+j]
		s = s[i+j+1:]
		if p, ok := r.variable(server, where, inner); ok {
			v = append(v, p)
		} else {
			text("${" + inner + "}")
		}
	}
	text(s)
	if len(v) == 0 {
		v = Literal("")
	}
	return v
}

// variable is the reference a client variable stands for, or false for one
// that is left as it is (with a note).
func (r *reader) variable(server, where, inner string) (Part, bool) {
	name, def, hasDef := inner, "", false
	if k, d, ok := strings.Cut(inner, ":-"); ok {
		name, def, hasDef = k, d, true
	}
	switch {
	case strings.HasPrefix(inner, "env:"):
		name, hasDef = strings.TrimPrefix(inner, "env:"), false
	case strings.HasPrefix(inner, "input:"):
		return r.input(server, where, strings.TrimPrefix(inner, "input:")), true
	case inner == "userHome":
		name, hasDef = "HOME", false
	case inner == "workspaceFolder" || inner == "workspaceRoot":
		r.note(server, "%s uses ${%s}, now the environment variable WORKSPACE_FOLDER: set it to the folder", where, inner)
		name, hasDef = "WORKSPACE_FOLDER", false
	}
	if !varName.MatchString(name) {
		r.note(server, "%s: ${%s} is not a variable mcphost knows; it is kept as written", where, inner)
		return Part{}, false
	}
	p := Part{Env: r.use(server, name, where, nil)}
	if hasDef {
		p.Default, p.HasDefault = def, true
	}
	return p, true
}

// A guard below replaces credentials written in clear in a value by
// references, by the names and patterns mcphost masks elsewhere
// (internal/secrets): a value whose name says it is a credential (TOKEN,
// API_KEY, Authorization), or whose text looks like one (ghp_..., sk-...,
// a JWT, key=value).

// looksSecret reports whether text holds a credential by its look alone.
func looksSecret(text string) bool { return text != "" && secrets.Mask(text) != text }

// guardEnv guards the value of environment variable key.
func (r *reader) guardEnv(server, key string, v Value) Value {
	if len(v) != 1 || v[0].Env != "" || v[0].Text == "" {
		return v
	}
	if !secrets.IsCredentialName(key) && !looksSecret(v[0].Text) {
		return v
	}
	name := key
	if !varName.MatchString(name) {
		name = envName(key)
	}
	return Value{r.secretRef(server, name, "env "+key, v[0].Text)}
}

// authSchemes are the header value prefixes kept in clear before a token.
var authSchemes = []string{"Bearer ", "Basic ", "Token ", "token ", "bearer "}

// guardHeader guards the value of header key.
func (r *reader) guardHeader(server, key string, v Value) Value {
	if len(v) != 1 || v[0].Env != "" || v[0].Text == "" {
		return v
	}
	text := v[0].Text
	lk := strings.ToLower(key)
	if lk != "authorization" && lk != "proxy-authorization" && lk != "cookie" && !secrets.IsCredentialName(key) && !looksSecret(text) {
		return v
	}
	for _, scheme := range authSchemes {
		if tok, ok := strings.CutPrefix(text, scheme); ok && tok != "" {
			return Value{{Text: scheme}, r.secretRef(server, envName(server, "token"), "header "+key, tok)}
		}
	}
	return Value{r.secretRef(server, envName(server, key), "header "+key, text)}
}

// guardArgs guards a command line: --name=SECRET, --name SECRET where the
// name says credential, and any argument that looks like one.
func (r *reader) guardArgs(server string, args []Value) []Value {
	out := make([]Value, len(args))
	for i, a := range args {
		out[i] = a
		if len(a) != 1 || a[0].Env != "" || a[0].Text == "" {
			continue
		}
		text := a[0].Text
		if flag, val, ok := strings.Cut(text, "="); ok && strings.HasPrefix(flag, "-") && val != "" &&
			(secrets.IsCredentialName(strings.TrimLeft(flag, "-")) || looksSecret(val)) {
			out[i] = Value{{Text: flag + "="}, r.secretRef(server, envName(server, strings.TrimLeft(flag, "-")), "argument "+flag, val)}
			continue
		}
		if i > 0 && len(args[i-1]) == 1 && args[i-1][0].Env == "" {
			if prev := args[i-1][0].Text; strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") && secrets.IsCredentialName(strings.TrimLeft(prev, "-")) {
				out[i] = Value{r.secretRef(server, envName(server, strings.TrimLeft(prev, "-")), "argument after "+prev, text)}
				continue
			}
		}
		if looksSecret(text) {
			out[i] = Value{r.secretRef(server, envName(server, "arg", itoa(i+1)), "argument "+itoa(i+1), text)}
		}
	}
	return out
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// guardURL guards a URL: the password of its userinfo and each query
// parameter whose name says credential.
func (r *reader) guardURL(server string, v Value) Value {
	if len(v) != 1 || v[0].Env != "" || v[0].Text == "" {
		return v
	}
	raw := v[0].Text
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return v
	}
	var out Value
	text := out.addText
	rest := raw
	if pw, ok := u.User.Password(); ok && pw != "" {
		// scheme://user:PASSWORD@host...
		at := strings.Index(rest, "@")
		colon := strings.LastIndex(rest[:at], ":")
		text(rest[:colon+1])
		out = append(out, r.secretRef(server, envName(server, "password"), "the URL's password", pw))
		rest = rest[at:]
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		text(rest)
		return out
	}
	text(rest[:q+1])
	query, frag, _ := strings.Cut(rest[q+1:], "#")
	for i, param := range strings.Split(query, "&") {
		if i > 0 {
			text("&")
		}
		k, val, ok := strings.Cut(param, "=")
		name, _ := url.QueryUnescape(k)
		if ok && val != "" && secrets.IsCredentialName(name) {
			// The variable holds the value as the URL writes it (escaped).
			text(k + "=")
			out = append(out, r.secretRef(server, envName(server, name), "the URL's "+name+" parameter", val))
			continue
		}
		text(param)
	}
	if strings.Contains(rest[q+1:], "#") {
		text("#" + frag)
	}
	return out
}
