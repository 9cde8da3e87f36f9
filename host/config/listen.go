package config

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcphost-project/mcphost/host/listener"
)

// decodeListen decodes the downstream endpoint. Unset fields stay zero for
// host.Config.WithDefaults; an unset http address is left to the CLI, which
// applies host.DefaultListenHTTP.
func (d *decoder) decodeListen(block *hcl.Block) listener.Config {
	content, diags := block.Body.Content(listenSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes

	var l listener.Config
	if s, ok := d.string(attrs["http"]); ok && d.checkListenAddr(attrs["http"], s) {
		l.HTTP = s
	}
	if s, ok := d.string(attrs["auth_token"]); ok {
		l.AuthToken = s
	}
	d.authTokenFailed = d.reported(attrs["auth_token"])
	if dur, ok := d.duration(attrs["session_timeout"], false); ok {
		l.SessionTimeout = dur
	}
	if n, ok := d.size(attrs["max_body"]); ok {
		if n == 0 || n > 1<<62 {
			d.errorf(attrs["max_body"].Expr.Range(), `Invalid size for "max_body"`,
				"max_body must be greater than zero and at most 4EiB, like \"4MiB\".")
		} else {
			l.MaxBodyBytes = int64(n)
		}
	}
	if dur, ok := d.duration(attrs["read_timeout"], false); ok {
		l.ReadTimeout = dur
	}
	if dur, ok := d.duration(attrs["write_timeout"], false); ok {
		l.WriteTimeout = dur
	}
	if dur, ok := d.duration(attrs["idle_timeout"], false); ok {
		l.IdleTimeout = dur
	}
	if n, ok := d.int(attrs["max_connections"], 1, 1<<20); ok {
		l.MaxConnections = int(n)
	}
	if n, ok := d.int(attrs["max_sessions"], 1, 1<<24); ok {
		l.MaxSessions = int(n)
	}
	if n, ok := d.int(attrs["max_streams_per_caller"], 1, 1<<20); ok {
		l.MaxStreamsPerCaller = int(n)
	}
	if n, ok := d.int(attrs["max_sessions_per_caller"], 1, 1<<24); ok {
		l.MaxSessionsPerCaller = int(n)
	}
	if dur, ok := d.duration(attrs["drain_timeout"], false); ok {
		l.DrainTimeout = dur
	}
	if origins, ranges, ok := d.stringList(attrs["allowed_origins"]); ok {
		for i, o := range origins {
			if _, err := listener.ParseOrigin(o); err != nil {
				d.errorf(ranges[i], "Invalid origin in allowed_origins",
					"%v. An origin is what a browser sends in its Origin header: a scheme, a host and an optional port, with no path.", err)
			}
		}
		l.AllowedOrigins = origins
	}
	d.decodeTLS(block, attrs, &l)
	for _, b := range content.Blocks {
		if b.Type != "auth" {
			continue
		}
		if l.Auth != nil {
			d.errorf(b.DefRange, "Duplicate auth block", "listen takes one auth block.")
			continue
		}
		l.Auth = d.decodeAuth(b)
	}
	if l.AuthToken == "" && !d.authTokenFailed && l.Auth == nil && l.HTTP != "" && !isLoopback(l.HTTP) {
		d.warnf(attrs["http"].Expr.Range(), "Listening beyond this machine without a token",
			"%s accepts connections from other machines and no auth_token is set, so anyone who can reach it can call every tool. "+
				"Set auth_token (for example auth_token = env(\"MCPHOST_TOKEN\")) or a listen.auth block, or listen on 127.0.0.1.", l.HTTP)
	}
	return l
}

// checkListenAddr requires host:port with a numeric port, as net.Listen does.
func (d *decoder) checkListenAddr(attr *hcl.Attribute, addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		if _, perr := strconv.ParseUint(port, 10, 16); perr != nil {
			err = fmt.Errorf("port %q is not a number from 0 to 65535", port)
		}
	}
	if err != nil {
		d.errorf(attr.Expr.Range(), `Invalid address for "http"`,
			"%q is not a host:port address (%s). Write it like \"127.0.0.1:7700\", or \":7700\" for every interface.", addr, err)
		return false
	}
	return true
}

// isLoopback reports whether addr only accepts local connections.
func isLoopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// decodeTLS reads tls_cert and tls_key (paths relative to the config),
// which come together, and checks that they load as a pair now rather
// than when mcphost starts to listen.
func (d *decoder) decodeTLS(block *hcl.Block, attrs hcl.Attributes, l *listener.Config) {
	cert, haveCert := d.string(attrs["tls_cert"])
	key, haveKey := d.string(attrs["tls_key"])
	// One whose value failed (an unset env()) is set, as far as pairing
	// goes: its own error says what is wrong with it.
	setCert := haveCert || d.reported(attrs["tls_cert"])
	setKey := haveKey || d.reported(attrs["tls_key"])
	switch {
	case !setCert && !setKey:
		return
	case !setCert || !setKey:
		d.errorf(block.DefRange, "Incomplete TLS settings",
			"Set both tls_cert (the certificate chain, PEM) and tls_key (its private key, PEM), or neither for plain HTTP.")
		return
	case !haveCert || !haveKey:
		return
	}
	l.TLSCert, l.TLSKey = d.path(cert), d.path(key)
	if _, err := tls.LoadX509KeyPair(l.TLSCert, l.TLSKey); err != nil {
		d.errorf(attrs["tls_cert"].Expr.Range(), "Cannot load the TLS certificate",
			"%v. tls_cert must name a PEM certificate (chain) and tls_key its PEM private key.", err)
	}
}
