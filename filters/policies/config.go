package policies

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// The helpers below read configuration values as the host passes them:
// strings as written, everything else JSON-encoded (section 10.1 of
// abi/SPEC.md). Extism cannot list the keys it was given, so a misspelt
// key goes unnoticed: docs/policies.md says so.

// stringMap reads an object of strings, like overrides = { a = "b" }.
func stringMap(cfg pdk.ConfigSource, key string) (map[string]string, error) {
	raw, ok := cfg.Lookup(key)
	if !ok || raw == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("config %q: want an object of strings, like { name = \"text\" }: %v", key, err)
	}
	return m, nil
}

// positiveInt reads a whole number of at least 1.
func positiveInt(cfg pdk.ConfigSource, key string, fallback int) (int, error) {
	raw, ok := cfg.Lookup(key)
	if !ok || raw == "" {
		return fallback, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 || n > 1<<31 {
		return 0, fmt.Errorf("config %q: want a whole number from 1 to %d, got %q", key, 1<<31, raw)
	}
	return int(n), nil
}

// enum reads a string that must be one of choices; the first is the default.
func enum(cfg pdk.ConfigSource, key string, choices ...string) (string, error) {
	v, ok := cfg.Lookup(key)
	if !ok || v == "" {
		return choices[0], nil
	}
	for _, c := range choices {
		if v == c {
			return v, nil
		}
	}
	return "", fmt.Errorf("config %q: want one of %q, got %q", key, choices, v)
}

// boolean reads a bool.
func boolean(cfg pdk.ConfigSource, key string, fallback bool) (bool, error) {
	if v, ok := cfg.Lookup(key); !ok || v == "" {
		return fallback, nil
	}
	return cfg.Bool(key, fallback)
}

// stringList reads a list of strings (or one string as a list of one).
func stringList(cfg pdk.ConfigSource, key string) ([]string, bool, error) {
	v, ok := cfg.Lookup(key)
	if !ok {
		return nil, false, nil
	}
	if v == "" {
		return []string{}, true, nil
	}
	list, err := cfg.Strings(key)
	return list, true, err
}

// objectOf reads a JSON object keeping its order, like fixed = { ... }.
func objectOf(cfg pdk.ConfigSource, key string) (object, bool, error) {
	raw, ok := cfg.Lookup(key)
	if !ok || raw == "" {
		return nil, false, nil
	}
	o, err := parseObject([]byte(raw))
	if err != nil {
		return nil, true, fmt.Errorf("config %q: want an object: %v", key, err)
	}
	return o, true, nil
}

// truncateRunes cuts s to at most n characters (Unicode code points),
// ending what it cut with marker, which counts towards n. It reports
// whether it cut.
func truncateRunes(s string, n int, marker string) (string, bool) {
	if runeCount(s) <= n {
		return s, false
	}
	keep := n - runeCount(marker)
	if keep < 0 {
		keep, marker = n, ""
	}
	i := 0
	for pos := range s {
		if i == keep {
			return s[:pos] + marker, true
		}
		i++
	}
	return s + marker, true
}

func runeCount(s string) int {
	n := 0
	for range s {
		n++
	}
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }

// refusal is how a policy that hides tools, prompts or resources answers a
// call of one it hides (config key "refusal"): "explain" (the default)
// gives the client its reason, so a model or user can tell a policy from a
// typo; "hide" answers as if it did not exist (unknown tool, resource not
// found), as before ABI 1.2.
type refusal struct{ hide bool }

func (r *refusal) configure(cfg pdk.ConfigSource) error {
	v, err := enum(cfg, "refusal", "explain", "hide")
	r.hide = v == "hide"
	return err
}

// refuseCall refuses a tool call with a formatted reason.
func (r refusal) refuseCall(format string, args ...any) *abi.CallDecision {
	d := pdk.Denyf(format, args...)
	d.Hidden = r.hide
	return d
}

// refuseRequest refuses a request with a formatted reason.
func (r refusal) refuseRequest(format string, args ...any) *abi.RequestDecision {
	return &abi.RequestDecision{Action: abi.ActionDeny, Reason: fmt.Sprintf(format, args...), Hidden: r.hide}
}
