package config

import (
	"encoding/json"
	"fmt"
	"maps"
)

// Masked stands for a secret value in what the admin API returns; sent
// back, it keeps the stored value.
const Masked = "********"

// SpecSecrets are the values of a definition that are never shown: env
// and header values, and the OAuth client secret. The store seals them.
type SpecSecrets struct {
	Env          map[string]string `json:"env,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	ClientSecret string            `json:"client_secret,omitempty"`
}

// Empty reports whether there is no secret.
func (s SpecSecrets) Empty() bool {
	return len(s.Env) == 0 && len(s.Headers) == 0 && s.ClientSecret == ""
}

// Split returns s with every secret value masked, and the secrets.
func (s ServerSpec) Split() (ServerSpec, SpecSecrets) {
	var sec SpecSecrets
	pub := s
	sec.Env, pub.Env = maps.Clone(s.Env), mask(s.Env)
	sec.Headers, pub.Headers = maps.Clone(s.Headers), mask(s.Headers)
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
	if s.OAuth != nil {
		o := *s.OAuth
		if o.ClientSecret == Masked {
			o.ClientSecret = sec.ClientSecret
		}
		out.OAuth = &o
	}
	return out
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

// Keep resolves the masked values of a new definition from the stored
// one's secrets: "********" sent back means "leave it as it is". A masked
// value with nothing stored under its name is an error.
func (s ServerSpec) Keep(stored SpecSecrets) (ServerSpec, error) {
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
	if s.OAuth != nil && s.OAuth.ClientSecret == Masked && stored.ClientSecret == "" {
		errs = append(errs, FieldError{Field: "oauth.client_secret", Detail: fmt.Sprintf("%q keeps a stored value, but none is stored; send the value", Masked)})
	}
	if len(errs) > 0 {
		return ServerSpec{}, &SpecError{Errors: errs}
	}
	return s.Join(stored), nil
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
