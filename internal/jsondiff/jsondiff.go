// Package jsondiff says where two JSON documents differ, as RFC 6901 JSON
// pointers: what an audit line records of a policy that rewrote a call's
// arguments or changed its result.
//
// Only values are compared: key order, white space and the spelling of a
// number (1, 1.0, 1e0) make no difference.
package jsondiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Paths returns the JSON pointers of the values that differ between before
// and after, in document order (object keys sorted), at most limit of them
// (limit <= 0: all); truncated reports that there were more. A value that
// is in one document only, or whose type changed, is one path; objects and
// arrays present in both are compared member by member, arrays index by
// index. Equal documents give no path; two different scalars at the top
// give "" (the whole document). Either side that is not JSON is an error.
//
// A path names only what after holds: an object key that before alone has
// is reported as its object's path. A key a policy took out, or renamed
// (a secret used as a key, masked), is never named where the paths are
// written (the audit log, traces).
func Paths(before, after []byte, limit int) (paths []string, truncated bool, err error) {
	a, err := decode(before)
	if err != nil {
		return nil, false, fmt.Errorf("jsondiff: before: %w", err)
	}
	b, err := decode(after)
	if err != nil {
		return nil, false, fmt.Errorf("jsondiff: after: %w", err)
	}
	d := differ{limit: limit}
	d.walk("", a, b)
	return d.paths, d.truncated, nil
}

// Equal reports whether two JSON documents hold the same values (see
// Paths); either side that is not JSON is an error.
func Equal(before, after []byte) (bool, error) {
	p, _, err := Paths(before, after, 1)
	return err == nil && len(p) == 0, err
}

func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return nil, fmt.Errorf("more than one JSON value, or text after it")
	}
	return v, nil
}

type differ struct {
	limit     int
	paths     []string
	truncated bool
}

func (d *differ) add(path string) {
	if d.limit > 0 && len(d.paths) >= d.limit {
		d.truncated = true
		return
	}
	d.paths = append(d.paths, path)
}

// full reports whether no more paths will be kept, so the walk can stop.
func (d *differ) full() bool { return d.truncated }

func (d *differ) walk(path string, a, b any) {
	if d.full() {
		return
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			d.add(path)
			return
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, both := x[k]; !both {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		removed := false
		for _, k := range keys {
			xv, inX := x[k]
			yv, inY := y[k]
			p := path + "/" + Escape(k)
			switch {
			case inX && inY:
				d.walk(p, xv, yv)
			case inY:
				d.add(p)
			case !removed:
				d.add(path) // removed: named by its object, once
				removed = true
			}
			if d.full() {
				return
			}
		}
	case []any:
		y, ok := b.([]any)
		if !ok {
			d.add(path)
			return
		}
		for i := 0; i < max(len(x), len(y)) && !d.full(); i++ {
			p := path + "/" + strconv.Itoa(i)
			if i < len(x) && i < len(y) {
				d.walk(p, x[i], y[i])
			} else {
				d.add(p)
			}
		}
	case json.Number:
		y, ok := b.(json.Number)
		if !ok || !sameNumber(x, y) {
			d.add(path)
		}
	default: // string, bool, nil
		if a != b {
			d.add(path)
		}
	}
}

// sameNumber compares two JSON numbers by value: 1, 1.0 and 1e0 are one
// number, whatever their size.
func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, _, errA := big.ParseFloat(string(a), 10, 256, big.ToNearestEven)
	y, _, errB := big.ParseFloat(string(b), 10, 256, big.ToNearestEven)
	return errA == nil && errB == nil && x.Cmp(y) == 0
}

// Escape escapes a key as a JSON pointer's reference token: "~" as "~0",
// "/" as "~1" (RFC 6901 §3).
func Escape(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// Unescape undoes Escape for one reference token.
func Unescape(token string) string {
	if !strings.Contains(token, "~") {
		return token
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(token)
}

// Split returns a pointer's reference tokens, unescaped; "" (the whole
// document) has none. A pointer that is neither "" nor starts with "/" is
// an error.
func Split(pointer string) ([]string, error) {
	if pointer == "" {
		return nil, nil
	}
	if pointer[0] != '/' {
		return nil, fmt.Errorf("jsondiff: %q is not a JSON pointer (it must start with /)", pointer)
	}
	tokens := strings.Split(pointer[1:], "/")
	for i, t := range tokens {
		tokens[i] = Unescape(t)
	}
	return tokens, nil
}
