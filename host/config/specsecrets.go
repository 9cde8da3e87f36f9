package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Masked stands for a secret value in what the admin API returns; sent
// back, it keeps the stored value.
const Masked = "********"

// SpecSecrets are the values of a definition that are never shown: env
// and header values, the OAuth client secret, the args that secret_args
// marks, and a URL that can carry a credential (one with userinfo, a query
// or a fragment, or marked by secret_url). The store seals them.
type SpecSecrets struct {
	Env          map[string]string `json:"env,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	ClientSecret string            `json:"client_secret,omitempty"`
	// URL is the whole URL; the definition shows it masked (MaskURL, and
	// its path too under secret_url).
	URL string `json:"url,omitempty"`
	// Args are the secret args by their position in args.
	Args map[int]string `json:"args,omitempty"`
}

// Empty reports whether there is no secret.
func (s SpecSecrets) Empty() bool {
	return len(s.Env) == 0 && len(s.Headers) == 0 && s.ClientSecret == "" && s.URL == "" && len(s.Args) == 0
}

// MaskURL returns a server URL with the parts that can carry a credential
// masked: the userinfo whole, and every value of the query and the
// fragment (the names stay). ok is false, and raw is returned, when there
// is no such part (or raw is not a URL of the form scheme://host/...,
// which Server refuses anyway).
func MaskURL(raw string) (masked string, ok bool) { return maskURL(raw, false) }

// maskURL is MaskURL; with whole (secret_url), the path is masked too,
// and every URL of the form scheme://host/... is masked (ok).
func maskURL(raw string, whole bool) (masked string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Scheme == "" || (!whole && u.User == nil && u.RawQuery == "" && u.Fragment == "") {
		return raw, false
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		b.WriteString(Masked + "@")
	}
	path := u.EscapedPath()
	if whole && path != "" && path != "/" {
		path = "/" + Masked
	}
	b.WriteString(u.Host + path)
	if u.RawQuery != "" {
		b.WriteString("?" + maskParams(u.RawQuery))
	}
	if u.Fragment != "" {
		b.WriteString("#" + maskParams(u.EscapedFragment()))
	}
	return b.String(), true
}

// maskParams masks the value of each name=value of a query or fragment; a
// part without "=" is masked whole.
func maskParams(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if name, _, ok := strings.Cut(p, "="); ok {
			parts[i] = name + "=" + Masked
		} else if p != "" {
			parts[i] = Masked
		}
	}
	return strings.Join(parts, "&")
}

// Split returns s with every secret value masked, and the secrets.
func (s ServerSpec) Split() (ServerSpec, SpecSecrets) {
	var sec SpecSecrets
	pub := s
	sec.Env, pub.Env = maps.Clone(s.Env), mask(s.Env)
	sec.Headers, pub.Headers = maps.Clone(s.Headers), mask(s.Headers)
	if len(s.SecretArgs) > 0 {
		pub.Args, sec.Args = slices.Clone(s.Args), map[int]string{}
		for _, i := range s.SecretArgs {
			if i >= 0 && i < len(s.Args) {
				sec.Args[i], pub.Args[i] = s.Args[i], Masked
			}
		}
	}
	if masked, ok := maskURL(s.URL, s.SecretURL); ok {
		sec.URL, pub.URL = s.URL, masked
	}
	if s.OAuth != nil {
		o := *s.OAuth
		if o.ClientSecret != "" {
			sec.ClientSecret, o.ClientSecret = o.ClientSecret, Masked
		}
		pub.OAuth = &o
	}
	return pub, sec
}

func mask(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = Masked
	}
	return out
}

// Join puts the secrets back into a masked definition.
func (s ServerSpec) Join(sec SpecSecrets) ServerSpec {
	out := s
	out.Env = unmask(s.Env, sec.Env)
	out.Headers = unmask(s.Headers, sec.Headers)
	if len(sec.Args) > 0 {
		out.Args = slices.Clone(s.Args)
		for i, v := range out.Args {
			if old, ok := sec.Args[i]; ok && v == Masked && slices.Contains(s.SecretArgs, i) {
				out.Args[i] = old
			}
		}
	}
	if sameURL(s.URL, sec.URL) {
		out.URL = sec.URL
	}
	if s.OAuth != nil {
		o := *s.OAuth
		if o.ClientSecret == Masked {
			o.ClientSecret = sec.ClientSecret
		}
		out.OAuth = &o
	}
	return out
}

// sameURL reports whether pub is stored, the URL kept sealed, as the API
// returns it: with or without its path masked (secret_url), so that
// secret_url can be turned on without sending the URL again.
func sameURL(pub, stored string) bool {
	if masked, ok := maskURL(stored, false); ok && pub == masked {
		return true
	}
	masked, ok := maskURL(stored, true)
	return ok && pub == masked
}

func unmask(pub, sec map[string]string) map[string]string {
	if pub == nil {
		return nil
	}
	out := make(map[string]string, len(pub))
	for k, v := range pub {
		if v == Masked {
			v = sec[k]
		}
		out[k] = v
	}
	return out
}

// Keep resolves the masked values of a new definition from prev, the
// stored definition it replaces (masked, as Split returns it; nil for
// none), and prev's secrets: "********" sent back means "leave it as it
// is". A masked value with nothing stored under its name is an error, and
// so is a URL holding "********" that is not the stored URL exactly as
// masked, and an arg "********" at a position that secret_args does not
// list or where no secret arg is stored (so that dropping a mark cannot
// store the secret in the clear). Keep with no stored secrets refuses
// every masked value: a new definition must not store "********" as a
// credential.
//
// A kept secret goes only where it went: a masked header or
// oauth.client_secret is refused when the URL's scheme, host or port
// changes, and a masked oauth.client_secret also when the issuer changes,
// so that no one reads a secret back by pointing the server at a listener
// of theirs. The error names each secret to send again.
func (s ServerSpec) Keep(prev *ServerSpec, stored SpecSecrets) (ServerSpec, error) {
	var errs []FieldError
	check := func(field string, m, old map[string]string) {
		for k, v := range m {
			if _, ok := old[k]; v == Masked && !ok {
				errs = append(errs, FieldError{Field: field + "." + k, Detail: fmt.Sprintf("%q keeps a stored value, but none is stored under %q; send the value", Masked, k)})
			}
		}
	}
	check("env", s.Env, stored.Env)
	check("headers", s.Headers, stored.Headers)
	for i, v := range s.Args {
		if _, ok := stored.Args[i]; v == Masked && (!ok || !slices.Contains(s.SecretArgs, i)) {
			errs = append(errs, FieldError{Field: "args", Detail: fmt.Sprintf("%q at position %d keeps the stored secret arg there, but none is stored there or secret_args does not list %d; send the value", Masked, i, i)})
		}
	}
	if s.OAuth != nil && s.OAuth.ClientSecret == Masked && stored.ClientSecret == "" {
		errs = append(errs, FieldError{Field: "oauth.client_secret", Detail: fmt.Sprintf("%q keeps a stored value, but none is stored; send the value", Masked)})
	}
	if strings.Contains(s.URL, Masked) && !sameURL(s.URL, stored.URL) {
		errs = append(errs, FieldError{Field: "url", Detail: fmt.Sprintf("a URL masked with %q keeps the stored one only when sent back exactly as it was returned; send the whole URL", Masked)})
	}
	if len(errs) > 0 {
		return ServerSpec{}, &SpecError{Errors: errs}
	}
	out := s.Join(stored)
	if prev != nil {
		errs = append(errs, s.retargeted(out, prev.Join(stored))...)
	}
	if len(errs) > 0 {
		return ServerSpec{}, &SpecError{Errors: errs}
	}
	return out, nil
}

// retargeted lists the secrets that s (masked, as sent) keeps from prev
// but that next (s with them kept) would send elsewhere: headers and the
// client secret to another origin, the client secret to another issuer.
func (s ServerSpec) retargeted(next, prev ServerSpec) []FieldError {
	var errs []FieldError
	from, to := origin(prev.URL), origin(next.URL)
	moved := from != to
	if moved {
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			if s.Headers[k] == Masked {
				errs = append(errs, FieldError{Field: "headers." + k, Detail: fmt.Sprintf(
					"%q keeps the value stored for %s, but url now goes to %s: a kept secret is sent only where it was; send the value again, or put back the url", Masked, from, to)})
			}
		}
	}
	if s.OAuth == nil || s.OAuth.ClientSecret != Masked {
		return errs
	}
	var prevIssuer string
	if prev.OAuth != nil {
		prevIssuer = prev.OAuth.Issuer
	}
	switch {
	case moved:
		errs = append(errs, FieldError{Field: "oauth.client_secret", Detail: fmt.Sprintf(
			"%q keeps the client secret stored for %s, but url now goes to %s: a kept secret is sent only where it was; send the value again, or put back the url", Masked, from, to)})
	case strings.TrimSuffix(prevIssuer, "/") != strings.TrimSuffix(s.OAuth.Issuer, "/"):
		errs = append(errs, FieldError{Field: "oauth.client_secret", Detail: fmt.Sprintf(
			"%q keeps the client secret stored for issuer %q, but the issuer is now %q: a kept secret is sent only where it was; send the value again, or put back the issuer", Masked, prevIssuer, s.OAuth.Issuer)})
	}
	return errs
}

// origin is where a URL's requests go: its scheme, host and port, in
// lower case and with the scheme's default port written out
// ("https://x.example:443"). It is "" when raw has no host (a stdio
// server), and raw itself when raw is not a URL.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.Host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "http", "ws":
			port = "80"
		case "https", "wss":
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// checkSecretMarks checks that secret_args names args there are, once
// each, and that secret_url has a URL to keep secret.
func (s ServerSpec) checkSecretMarks() []FieldError {
	var errs []FieldError
	seen := make(map[int]bool, len(s.SecretArgs))
	for _, i := range s.SecretArgs {
		switch {
		case i < 0 || i >= len(s.Args):
			errs = append(errs, FieldError{Field: "secret_args", Detail: fmt.Sprintf("%d is not the position of an arg: there are %d args, counted from 0", i, len(s.Args))})
		case seen[i]:
			errs = append(errs, FieldError{Field: "secret_args", Detail: fmt.Sprintf("%d is listed twice; list each position once", i)})
		}
		seen[i] = true
	}
	if s.SecretURL && s.URL == "" {
		errs = append(errs, FieldError{Field: "secret_url", Detail: "there is no url to keep secret; add the url or remove secret_url"})
	}
	return errs
}

// DecodeSecrets reads what SpecSecrets marshalled to; empty is none.
func DecodeSecrets(b []byte) (SpecSecrets, error) {
	var s SpecSecrets
	if len(b) == 0 {
		return s, nil
	}
	err := json.Unmarshal(b, &s)
	return s, err
}
