package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// sizeUnits are the suffixes a size may carry, matched case-insensitively.
// Both binary (KiB) and decimal (KB) units are accepted because operators
// write both; they mean what they say.
var sizeUnits = []struct {
	suffix string
	bytes  uint64
}{
	// Longest first, so "KiB" is not read as "B" after a number "Ki".
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000},
	{"b", 1},
}

// parseSize parses "16MiB", "4 MB", "1024B" or "1024" (bytes).
func parseSize(s string) (uint64, error) {
	text := strings.TrimSpace(s)
	lower := strings.ToLower(text)
	mult := uint64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(lower, u.suffix) {
			mult = u.bytes
			text = strings.TrimSpace(text[:len(text)-len(u.suffix)])
			break
		}
	}
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number of bytes with an optional unit (B, KiB, MiB, GiB, KB, MB, GB), like \"16MiB\"", s)
	}
	if n > math.MaxUint64/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// size reads a size attribute, written as a string with a unit or as a plain
// number of bytes.
func (d *decoder) size(attr *hcl.Attribute) (uint64, bool) {
	val, ok := d.eval(attr)
	if !ok {
		return 0, false
	}
	val, ok = d.convert(attr, val, cty.String, `a size like "16MiB"`)
	if !ok {
		return 0, false
	}
	n, err := parseSize(val.AsString())
	if err != nil {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid size for %q", attr.Name), "%s.", err)
		return 0, false
	}
	return n, true
}

// duration reads a positive duration such as "30s". When zeroMeansNever is
// set, a zero duration ("0", "0s") means "never" and is returned as -1, the
// host's encoding for it; elsewhere zero is refused because it would silently
// select the default, which is not what someone writing 0 expects.
func (d *decoder) duration(attr *hcl.Attribute, zeroMeansNever bool) (time.Duration, bool) {
	val, ok := d.eval(attr)
	if !ok {
		return 0, false
	}
	val, ok = d.convert(attr, val, cty.String, `a duration like "30s"`)
	if !ok {
		return 0, false
	}
	s := val.AsString()
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid duration for %q", attr.Name),
			"%q is not a duration. Write a number with a unit: \"500ms\", \"30s\", \"5m\" or \"1h\".", s)
		return 0, false
	}
	switch {
	case dur == 0 && zeroMeansNever:
		return -1, true
	case dur == 0:
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid duration for %q", attr.Name),
			"%s must be greater than zero. Remove it to use the default.", attr.Name)
		return 0, false
	case dur < 0:
		hint := ""
		if zeroMeansNever {
			hint = ` Use "0" for never.`
		}
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid duration for %q", attr.Name),
			"%s must not be negative.%s", attr.Name, hint)
		return 0, false
	}
	return dur, true
}
