package config

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/internal/seal"
)

// Grants says where the OAuth grants of servers that log in are kept: a
// file, 0600, sealed when a key is given; or the store, sealed with its
// key, where replicas on one database share them.
type Grants struct {
	File string // absolute; "" when Store
	Key  []byte // nil: the tokens are in the clear (the file is 0600)
	// Store keeps them in the store (config has a store with a key and
	// no grants block).
	Store bool
}

// DefaultGrantsFile is the grants file, beside the config, of a config
// whose servers log in and that names none.
const DefaultGrantsFile = "mcphost-grants.json"

func (d *decoder) decodeGrants(block *hcl.Block) *Grants {
	content, diags := block.Body.Content(grantsSchema)
	d.diags = append(d.diags, diags...)
	g := &Grants{File: d.path(DefaultGrantsFile)}
	if v, ok := d.string(content.Attributes["file"]); ok && v != "" {
		g.File = d.path(v)
	}
	if attr := content.Attributes["key"]; attr != nil {
		if v, ok := d.string(attr); ok {
			key, err := seal.ParseKey(v)
			if err != nil {
				d.errorf(attr.Expr.Range(), "Invalid grants key", "%s.", err)
			}
			g.Key = key
		}
	}
	return g
}

// defaultGrants gives a config whose servers log in (an oauth block
// without a grant) and that has no grants block somewhere to keep them:
// the store when it has a key (replicas then share them), else the
// default grants file.
func (d *decoder) defaultGrants(file *File) {
	if file.Grants != nil {
		return
	}
	for _, s := range file.Host.Servers {
		if s.OAuth != nil && s.OAuth.Grant == "" {
			if file.Store != nil && file.Store.Key != nil {
				file.Grants = &Grants{Store: true}
			} else {
				file.Grants = &Grants{File: d.path(DefaultGrantsFile)}
			}
			return
		}
	}
}
