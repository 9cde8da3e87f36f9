package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Values read with env() and file() are usually secrets (tokens, keys).
// Written in the wrong field (a token as a timeout), the field's
// diagnostic would print the value. The functions note what they return
// while an attribute is evaluated; the decoder notes every attribute whose
// evaluation read one, and diagnostics about such an attribute show
// "(sensitive value from env("NAME"))" instead of the value.

// secret is one sensitive value and where it came from.
type secret struct {
	value string
	from  string
}

// hiddenAttr is an attribute whose value holds secrets.
type hiddenAttr struct {
	rng     hcl.Range
	secrets []secret
}

// sensitive returns v, read by from (like env("TOKEN")), and remembers it
// for the attribute being evaluated.
func (d *decoder) sensitive(v, from string) cty.Value {
	d.evalSecrets = append(d.evalSecrets, secret{value: v, from: from})
	return cty.StringVal(v)
}

// hideSecrets rewrites every diagnostic about a hidden attribute so that
// it shows where each secret came from instead of the secret.
func hideSecrets(diags hcl.Diagnostics, hidden []hiddenAttr) {
	for _, diag := range diags {
		if diag.Subject == nil {
			continue
		}
		for _, h := range hidden {
			if !overlaps(*diag.Subject, h.rng) {
				continue
			}
			diag.Summary = redact(diag.Summary, h.secrets)
			diag.Detail = redact(diag.Detail, h.secrets)
		}
	}
}

// overlaps reports whether two ranges share a byte (or touch, for the
// empty ranges some diagnostics carry).
func overlaps(a, b hcl.Range) bool {
	return a.Filename == b.Filename && a.Start.Byte <= b.End.Byte && b.Start.Byte <= a.End.Byte
}

// redact replaces each secret in s, quoted (as %q prints it) or not, the
// longest first so that a secret inside another is not half replaced.
func redact(s string, secrets []secret) string {
	sorted := append([]secret(nil), secrets...)
	sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i].value) > len(sorted[j].value) })
	for _, sec := range sorted {
		if sec.value == "" {
			continue
		}
		with := fmt.Sprintf("(sensitive value from %s)", sec.from)
		s = strings.ReplaceAll(s, strconv.Quote(sec.value), with)
		s = strings.ReplaceAll(s, sec.value, with)
		if q := strconv.Quote(sec.value); len(q) > 2 {
			s = strings.ReplaceAll(s, q[1:len(q)-1], with) // escaped, inside a longer quoted string
		}
	}
	return s
}
