package pdk

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// ConfigSource looks up one value of a plugin's configuration. Config is the
// source a plugin has in Wasm; tests use a map (see abi/policytest).
//
// The host fills the configuration from the plugin's HCL config object:
// string values are passed as they are, every other value (numbers, bools,
// lists, objects) JSON-encoded. The typed methods decode accordingly. A nil
// ConfigSource has no values.
type ConfigSource func(key string) (value string, ok bool)

// Lookup returns the raw value of key.
func (c ConfigSource) Lookup(key string) (string, bool) {
	if c == nil {
		return "", false
	}
	return c(key)
}

// String returns the value of key, or fallback if it is not set.
func (c ConfigSource) String(key, fallback string) string {
	if v, ok := c.Lookup(key); ok {
		return v
	}
	return fallback
}

// Bool returns the value of key as a bool (HCL true or "true", and the other
// spellings strconv.ParseBool accepts), or fallback if it is not set.
func (c ConfigSource) Bool(key string, fallback bool) (bool, error) {
	v, ok := c.Lookup(key)
	if !ok {
		return fallback, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fallback, fmt.Errorf("config %q: want a bool, got %q", key, v)
	}
	return b, nil
}

// Int returns the value of key as an integer, or fallback if it is not set.
func (c ConfigSource) Int(key string, fallback int64) (int64, error) {
	v, ok := c.Lookup(key)
	if !ok {
		return fallback, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fallback, fmt.Errorf("config %q: want an integer, got %q", key, v)
	}
	return n, nil
}

// Strings returns the value of key as a list of strings: a JSON array of
// strings (an HCL list), or a single string (an HCL string that is not such
// an array) as a list of one. It returns nil if key is not set.
func (c ConfigSource) Strings(key string) ([]string, error) {
	v, ok := c.Lookup(key)
	if !ok {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(v), &list); err == nil {
		return list, nil
	}
	var other []any
	if err := json.Unmarshal([]byte(v), &other); err == nil {
		return nil, fmt.Errorf("config %q: want a list of strings, got %s", key, v)
	}
	return []string{v}, nil
}

// JSON decodes the JSON-encoded value of key into v and reports whether key
// was set. A string value is not JSON-encoded; use String for those.
func (c ConfigSource) JSON(key string, v any) (bool, error) {
	raw, ok := c.Lookup(key)
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return true, fmt.Errorf("config %q: %w", key, err)
	}
	return true, nil
}

// Level is a log level, from LevelTrace to LevelError.
type Level int

// Log levels, as Extism defines them.
const (
	LevelTrace Level = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
)

// String returns the level's name.
func (l Level) String() string {
	switch l {
	case LevelTrace:
		return "trace"
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return "Level(" + strconv.Itoa(int(l)) + ")"
}
