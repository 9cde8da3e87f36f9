package config

import (
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/auth"
)

// decodeAuth decodes listen.auth: API keys, each an identity, and OAuth.
func (d *decoder) decodeAuth(block *hcl.Block) *auth.Config {
	content, diags := block.Body.Content(authSchema)
	d.diags = append(d.diags, diags...)
	cfg := &auth.Config{}
	if groups, _, ok := d.stringList(content.Attributes["admin_groups"]); ok {
		cfg.AdminGroups = groups
	}
	names := map[string]bool{}
	// declared are the names of every key block, even one with an error:
	// it is there, and its error is reported at its cause, not again at
	// what names it.
	declared := map[string]bool{}
	seen := map[[32]byte]string{}
	for _, b := range content.Blocks {
		switch b.Type {
		case "key":
			declared[b.Labels[0]] = true
			k, ok := d.decodeKey(b)
			if !ok {
				continue
			}
			if names[k.Name] {
				d.errorf(b.LabelRanges[0], "Duplicate key", "Another key block is named %q; give each key its own name.", k.Name)
				continue
			}
			if other, dup := seen[k.SHA256]; dup {
				d.errorf(b.DefRange, "Same key twice", "Keys %q and %q are the same key: a client presenting it could not be told apart. Give each identity its own key.", other, k.Name)
				continue
			}
			names[k.Name], seen[k.SHA256] = true, k.Name
			cfg.Keys = append(cfg.Keys, k)
		case "oauth":
			if cfg.OAuth != nil {
				d.errorf(b.DefRange, "Duplicate oauth block", "listen.auth takes one oauth block: mcphost trusts one authorization server.")
				continue
			}
			cfg.OAuth = d.decodeOAuth(b)
		}
	}
	if attr := content.Attributes["stdio_key"]; attr != nil {
		if s, ok := d.string(attr); ok {
			switch {
			case names[s]:
				cfg.StdioKey = s
			case !declared[s]:
				d.errorf(attr.Expr.Range(), "Unknown key", "stdio_key = %q names no key block of listen.auth; name the key whose identity a stdio client has.%s",
					s, didYouMean(s, slices.Sorted(maps.Keys(declared))))
			}
		}
	}
	if len(declared) == 0 && cfg.OAuth == nil {
		d.errorf(block.DefRange, "Empty auth block", "listen.auth needs at least one key block or an oauth block; without them nobody could connect.")
	}
	return cfg
}

// decodeKey decodes one key block. ok is false when it has an error; the
// rest of the block is still checked, so that each of its mistakes is
// reported in one run.
func (d *decoder) decodeKey(b *hcl.Block) (k auth.Key, ok bool) {
	content, diags := b.Body.Content(keySchema)
	d.diags = append(d.diags, diags...)
	ok = !diags.HasErrors()
	attrs := content.Attributes
	k = auth.Key{Name: b.Labels[0]}
	hashAttr, valueAttr := attrs["sha256"], attrs["value"]
	switch {
	case hashAttr != nil && valueAttr != nil:
		d.errorf(b.DefRange, "Both sha256 and value", "Key %q sets sha256 and value: keep sha256 (the digest of the key) or value (the key itself, usually env(\"NAME\")), not both.", k.Name)
		ok = false
	case hashAttr != nil:
		s, valid := d.string(hashAttr)
		if !valid {
			ok = false
			break
		}
		sum, err := auth.ParseSHA256(s)
		if err != nil {
			d.errorf(hashAttr.Expr.Range(), "Invalid key digest", "%v.", err)
			ok = false
			break
		}
		k.SHA256 = sum
	case valueAttr != nil:
		s, valid := d.string(valueAttr)
		if !valid {
			ok = false
			break
		}
		if len(s) < auth.MinKeyBytes {
			d.errorf(valueAttr.Expr.Range(), "Key too short", "Key %q is %d bytes; a key must be at least %d (for example from `openssl rand -hex 32`).", k.Name, len(s), auth.MinKeyBytes)
			ok = false
			break
		}
		k.SHA256 = auth.KeyFromValue(k.Name, s).SHA256
	default:
		d.errorf(b.DefRange, "Key without a key", "Key %q needs sha256 (the SHA-256 of the key, hex) or value (the key, usually env(\"NAME\")).", k.Name)
		ok = false
	}
	subj, valid := d.string(attrs["subject"])
	if d.missing(attrs["subject"], subj) && !misspelled(b, keySchema, "subject") {
		d.errorf(b.DefRange, "Key without a subject", "Key %q needs subject: the identity policies see for a client presenting it.", k.Name)
	}
	ok = ok && valid && subj != ""
	k.Subject = subj
	if groups, _, valid := d.stringList(attrs["groups"]); valid {
		k.Groups = groups
	} else if d.reported(attrs["groups"]) {
		ok = false
	}
	if m, valid := d.stringMap(attrs["attributes"]); valid {
		k.Attributes = m
	} else if d.reported(attrs["attributes"]) {
		ok = false
	}
	return k, ok
}

// decodeOAuth decodes the oauth block.
func (d *decoder) decodeOAuth(b *hcl.Block) *auth.OAuth {
	content, diags := b.Body.Content(oauthSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	o := &auth.OAuth{}
	o.Issuer, _ = d.string(attrs["issuer"])
	o.Audience, _ = d.string(attrs["audience"])
	if s, _, ok := d.stringList(attrs["scopes"]); ok {
		o.Scopes = s
	}
	if s, _, ok := d.stringList(attrs["algorithms"]); ok {
		o.Algorithms = s
	}
	o.SubjectClaim, _ = d.string(attrs["subject_claim"])
	o.GroupsClaim, _ = d.string(attrs["groups_claim"])
	o.JWKSURL, _ = d.string(attrs["jwks_url"])
	if m, ok := d.stringMap(attrs["attributes"]); ok {
		o.Attributes = m
	}
	if dur, ok := d.duration(attrs["clock_skew"], false); ok {
		o.ClockSkew = dur
	}
	if o.Issuer != "" && o.Audience != "" {
		if err := o.Check(); err != nil {
			d.errorf(b.DefRange, "Invalid oauth block", "%v.", err)
		}
	}
	return o
}
