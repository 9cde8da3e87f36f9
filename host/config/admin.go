package config

import (
	"net"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/internal/loopback"
)

// Admin configures the admin API's listener (host/admin).
type Admin struct {
	HTTP string // address, like "127.0.0.1:7701"
	// MaxConnections caps the admin listener's open connections apart from
	// the MCP listener's, so that neither can starve the other.
	MaxConnections int
}

// DefaultAdminMaxConnections is admin.max_connections when unset: the admin
// API's clients are a few operators and scripts.
const DefaultAdminMaxConnections = 64

// Store says where run-time state is kept.
type Store struct {
	Driver string // store.SQLite or store.Postgres
	DSN    string // the SQLite file (absolute) or the PostgreSQL URL
	Key    []byte // seals secrets; nil keeps none
	Poll   time.Duration
}

// DefaultStoreFile is the SQLite file, beside the config, that an admin
// block without a store block uses.
const DefaultStoreFile = "mcphost.db"

// DefaultStorePoll is how often a replica looks for the others' changes.
const DefaultStorePoll = 2 * time.Second

func (d *decoder) decodeAdmin(block *hcl.Block) *Admin {
	content, diags := block.Body.Content(adminSchema)
	d.diags = append(d.diags, diags...)
	a := &Admin{MaxConnections: DefaultAdminMaxConnections}
	if n, ok := d.int(content.Attributes["max_connections"], 1, 1<<16); ok {
		a.MaxConnections = int(n)
	}
	if attr := content.Attributes["http"]; attr != nil {
		if s, ok := d.string(attr); ok {
			if _, _, err := net.SplitHostPort(s); err != nil {
				d.errorf(attr.Expr.Range(), "Invalid admin address", "%q is not host:port (%s). Write it like \"127.0.0.1:7701\".", s, err)
			} else {
				a.HTTP = s
				if !loopback.Is(s) {
					d.warnf(attr.Expr.Range(), "Admin API off loopback",
						"admin.http %q is reachable from other machines, and the admin API speaks plain HTTP: admin keys and the secrets of server definitions cross the network in the clear. "+
							"Listen on loopback (\"127.0.0.1:7701\") and reach it through an SSH tunnel or a TLS-terminating proxy.", s)
				}
			}
		}
	}
	return a
}

func (d *decoder) decodeStore(block *hcl.Block) *Store {
	content, diags := block.Body.Content(storeSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	s := &Store{Driver: store.SQLite, DSN: d.path(DefaultStoreFile), Poll: DefaultStorePoll}
	if attrs["sqlite"] != nil && attrs["postgres"] != nil {
		d.errorf(attrs["postgres"].NameRange, "Two stores", "A store is either an SQLite file or a PostgreSQL database; remove sqlite or postgres.")
	}
	if v, ok := d.string(attrs["sqlite"]); ok && v != "" {
		s.DSN = d.path(v)
	}
	if v, ok := d.string(attrs["postgres"]); ok {
		s.Driver, s.DSN = store.Postgres, v
	}
	if attr := attrs["key"]; attr != nil {
		if v, ok := d.string(attr); ok {
			key, err := store.ParseKey(v)
			if err != nil {
				d.errorf(attr.Expr.Range(), "Invalid store key", "%s.", err)
			}
			s.Key = key
		}
	}
	if v, ok := d.duration(attrs["poll"], false); ok {
		s.Poll = v
	}
	return s
}

// checkAdmin gives an admin block its default store and refuses one that
// anyone could use: the admin API starts programs on this machine.
func (d *decoder) checkAdmin(file *File, block *hcl.Block) {
	if file.Admin == nil {
		return
	}
	if file.Store == nil {
		file.Store = &Store{Driver: store.SQLite, DSN: filepath.Join(d.dir, DefaultStoreFile), Poll: DefaultStorePoll}
	}
	l := file.Host.Listen
	if l.Auth == nil && l.AuthToken == "" && !d.authTokenFailed {
		d.errorf(block.DefRange, "Admin API without credentials",
			"The admin API adds servers, which can start any program on this machine, so it needs credentials. "+
				"Add a listen { auth { key %q { sha256 = \"...\", groups = [\"admins\"] } } } block (or listen.auth_token); "+
				"callers in listen.auth.admin_groups (default: keys in %q) may use it.", "operator", "admins")
	}
	if file.Admin.HTTP != "" && file.Admin.HTTP == l.HTTP {
		d.errorf(block.DefRange, "Admin address taken", "admin.http is the same address as listen.http (%s); give the admin API its own, like \"127.0.0.1:7701\".", l.HTTP)
	}
}
