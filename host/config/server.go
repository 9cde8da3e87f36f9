package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcphost-project/mcphost/host/gateway"
	"github.com/mcphost-project/mcphost/host/upstream"
)

// transportHTTP is accepted as a short alias for streamable-http.
const transportHTTP = "http"

// protocolVersion matches MCP's date-shaped protocol versions.
var protocolVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// Arguments that only make sense for one kind of transport.
var (
	stdioOnly  = []string{"command", "args", "env", "cwd"}
	remoteOnly = []string{"url", "headers"}
)

// decodeServer decodes one upstream server. Unset fields stay zero for
// host.Config.WithDefaults, except idle_timeout = "0", which becomes the
// host's "never" (a negative duration).
func (d *decoder) decodeServer(block *hcl.Block) upstream.ServerConfig {
	content, diags := block.Body.Content(serverSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes

	s := upstream.ServerConfig{Name: block.Labels[0]}
	d.checkName(block, "server")
	tmpl, undo := d.serverCallerTemplate(s.Name, attrs)

	if t, ok := d.enum(attrs["transport"], upstream.TransportStdio, upstream.TransportSSE, upstream.TransportStreamableHTTP, transportHTTP); ok {
		if t == transportHTTP {
			t = upstream.TransportStreamableHTTP
		}
		s.Transport = t
	}
	transportKnown := !d.reported(attrs["transport"])

	if v, ok := d.string(attrs["command"]); ok {
		s.Command = v
		d.commandRanges[s.Name] = attrs["command"].Expr.Range()
	}
	if v, _, ok := d.stringList(attrs["args"]); ok {
		s.Args = v
	}
	if v, ok := d.stringMap(attrs["env"]); ok {
		s.Env = v
	}
	if v, ok := d.string(attrs["cwd"]); ok && v != "" {
		s.Cwd = d.path(v)
	}
	if v, ok := d.string(attrs["url"]); ok && d.checkURL(attrs["url"], v) {
		s.URL = v
	}
	if v, ok := d.stringMap(attrs["headers"]); ok {
		s.Headers = v
	}
	if v, ok := d.duration(attrs["timeout"], false); ok {
		s.Timeout = v
	}
	if v, ok := d.duration(attrs["idle_timeout"], true); ok {
		s.IdleTimeout = v
	}
	if v, ok := d.duration(attrs["connect_timeout"], false); ok {
		s.ConnectTimeout = v
	}
	if v, ok := d.enum(attrs["sessions"], upstream.SessionsShared, upstream.SessionsPerClient, upstream.SessionsPerSession); ok {
		s.Sessions = v
	}
	if n, ok := d.int(attrs["max_sessions"], 1, 100000); ok {
		s.MaxSessions = int(n)
	}
	if v, ok := d.string(attrs["protocol_version"]); ok {
		if protocolVersion.MatchString(v) {
			s.ProtocolVersion = v
		} else {
			d.errorf(attrs["protocol_version"].Expr.Range(), "Invalid protocol_version",
				"protocol_version %q is not an MCP protocol version; they are dates like %q. Remove it to use %q.",
				v, upstream.DefaultProtocolVersion, upstream.DefaultProtocolVersion)
		}
	}

	undo() // caller is for the attributes above, not for the oauth block

	// With a bad transport any guess about which arguments belong would be
	// wrong, so the transport error stands alone.
	if transportKnown {
		d.checkTransportArgs(block, attrs, s)
	}
	for _, b := range content.Blocks {
		if b.Type == "oauth" {
			if s.OAuth != nil {
				d.errorf(b.DefRange, "Duplicate oauth block", "Server %q takes one oauth block.", s.Name)
				continue
			}
			s.OAuth = d.decodeUpstreamOAuth(b, s)
		}
	}
	if tmpl != nil {
		if _, ok := tmpl.exprs["url"]; ok && s.OAuth != nil {
			d.errorf(attrs["url"].Expr.Range(), "Caller values in an OAuth server's url",
				"Server %q takes OAuth tokens for one resource, its url: the url cannot differ per caller. Use the caller's values in headers, or remove the oauth block.", s.Name)
		}
		if d.callerServers == nil {
			d.callerServers = map[string]hcl.Range{}
		}
		d.callerServers[s.Name] = block.DefRange
		tmpl.render(s)
		s.Caller = tmpl
	}
	return s
}

// checkTransportArgs requires what the transport needs and refuses what it
// would ignore. Ignored arguments are errors, not warnings: a url on a stdio
// server almost always means a forgotten transport line, and a server that
// quietly runs something other than what the file says is worse than one
// that does not start.
func (d *decoder) checkTransportArgs(block *hcl.Block, attrs hcl.Attributes, s upstream.ServerConfig) {
	name := s.Name
	if s.Transport == "" || s.Transport == upstream.TransportStdio {
		if attrs["transport"] == nil && attrs["command"] == nil && attrs["url"] != nil {
			d.errorf(block.DefRange, "Missing transport for remote server",
				"Server %q sets url but no transport, so it defaults to stdio, which runs a local command. "+
					"Add transport = %q (or %q).", name, upstream.TransportStreamableHTTP, upstream.TransportSSE)
			return
		}
		if s.Command == "" && !d.reported(attrs["command"]) && !misspelled(block, serverSchema, "command") {
			d.errorf(rangeOr(attrs["command"], block.DefRange), "Missing command for stdio server",
				"Server %q uses the stdio transport, which runs a local program. Set command (and args), "+
					"like command = \"npx\".", name)
		}
		for _, arg := range remoteOnly {
			if attr := attrs[arg]; attr != nil {
				d.errorf(attr.NameRange, fmt.Sprintf("%s is not used by stdio servers", arg),
					"Server %q uses the stdio transport, which ignores %s. Remove %s, or set transport = %q (or %q) to connect to a remote server.",
					name, arg, arg, upstream.TransportStreamableHTTP, upstream.TransportSSE)
			}
		}
		return
	}
	if s.URL == "" && !d.reported(attrs["url"]) && !misspelled(block, serverSchema, "url") {
		d.errorf(rangeOr(attrs["url"], block.DefRange), fmt.Sprintf("Missing url for %s server", s.Transport),
			"Server %q uses the %s transport, which connects to a remote server. Set url, like url = \"https://mcp.example.com/mcp\".",
			name, s.Transport)
	}
	for _, arg := range stdioOnly {
		if attr := attrs[arg]; attr != nil {
			d.errorf(attr.NameRange, fmt.Sprintf("%s is not used by %s servers", arg, s.Transport),
				"Server %q uses the %s transport, which connects to url and runs nothing locally. Remove %s, or set transport = %q to run a local program.",
				name, s.Transport, arg, upstream.TransportStdio)
		}
	}
}

// checkURL requires an absolute http or https URL with a host.
func (d *decoder) checkURL(attr *hcl.Attribute, raw string) bool {
	u, err := url.Parse(raw)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return true
	}
	d.errorf(attr.Expr.Range(), "Invalid url",
		"%q is not an http:// or https:// URL with a host. Write the full endpoint, like \"https://mcp.example.com/mcp\".", raw)
	return false
}

// checkName requires a block name that can appear in a tool name, since a
// server's name prefixes its tools and plugins are named in logs alongside.
func (d *decoder) checkName(block *hcl.Block, kind string) {
	name := block.Labels[0]
	if name != "" && isToolNameText(name) {
		return
	}
	d.errorf(block.LabelRanges[0], fmt.Sprintf("Invalid %s name", kind),
		"%s name %q must be one or more letters, digits, '_' or '-', the characters kept in exposed tool names.",
		kind, name)
}

// decodeUpstreamOAuth decodes a server's oauth block: the
// client_credentials grant (machine to machine), the token_exchange grant
// (each caller's token exchanged, RFC 8693), or a login with the
// authorization code flow (mode "shared", or "per_user": each caller
// authorizes for themself).
func (d *decoder) decodeUpstreamOAuth(b *hcl.Block, s upstream.ServerConfig) *upstream.UpstreamOAuth {
	content, diags := b.Body.Content(upstreamOAuthSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	o := &upstream.UpstreamOAuth{}
	if s.Transport != "" && s.Transport != upstream.TransportStreamableHTTP {
		d.errorf(b.DefRange, "OAuth needs streamable-http", "Server %q uses the %s transport; mcphost gets OAuth tokens for streamable-http servers only.", s.Name, s.Transport)
	}
	if v, ok := d.enum(attrs["grant"], upstream.GrantClientCredentials, upstream.GrantTokenExchange); ok {
		o.Grant = v
	}
	if a := attrs["mode"]; a != nil {
		if v, ok := d.enum(a, upstream.OAuthShared, upstream.OAuthPerUser); ok {
			o.Mode = v
		}
	}
	o.ClientID, _ = d.string(attrs["client_id"])
	o.ClientSecret, _ = d.string(attrs["client_secret"])
	if a := attrs["client_assertion_key"]; a != nil {
		if v, ok := d.string(a); ok {
			o.ClientAssertionKey = v
			if o.Grant != upstream.GrantClientCredentials {
				d.errorf(a.NameRange, "client_assertion_key is for client_credentials", "private_key_jwt authenticates the client of grant = %q; remove client_assertion_key.", upstream.GrantClientCredentials)
			} else if o.ClientSecret != "" {
				d.errorf(a.NameRange, "Two client credentials", "Give client_secret or client_assertion_key (private_key_jwt), not both.")
			}
		}
	}
	if v, ok := d.enum(attrs["client_assertion_alg"], "ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"); ok {
		o.ClientAssertionAlg = v
	}
	if v, ok := d.string(attrs["issuer"]); ok {
		o.Issuer = v
	}
	if a := attrs["audience"]; a != nil {
		if v, ok := d.string(a); ok {
			o.Audience = v
		}
		if o.Grant != upstream.GrantTokenExchange {
			d.errorf(a.NameRange, "audience is for token exchange", "audience names what a token exchange asks for; it needs grant = %q.", upstream.GrantTokenExchange)
		}
	}
	if v, _, ok := d.stringList(attrs["scopes"]); ok {
		o.Scopes = v
	}
	if a := attrs["redirect_url"]; a != nil {
		if v, ok := d.string(a); ok && d.checkURL(a, v) {
			o.RedirectURL = v
		}
	}
	if a := attrs["client_metadata_url"]; a != nil {
		if v, ok := d.string(a); ok && d.checkURL(a, v) {
			o.ClientMetadataURL = v
		}
	}
	if o.Grant != "" {
		loginOnly := []string{"mode", "redirect_url", "scopes", "client_metadata_url"}
		if o.Grant == upstream.GrantTokenExchange {
			loginOnly = []string{"mode", "redirect_url", "client_metadata_url"} // an exchange asks for scopes
		}
		for _, name := range loginOnly {
			if a := attrs[name]; a != nil {
				d.errorf(a.NameRange, fmt.Sprintf("%s is for logins", name), "The %s grant logs nobody in; remove %s, or remove grant to log in with the authorization code flow.", o.Grant, name)
			}
		}
		if d.missing(attrs["client_id"], o.ClientID) ||
			(d.missing(attrs["client_secret"], o.ClientSecret) && d.missing(attrs["client_assertion_key"], o.ClientAssertionKey)) {
			d.errorf(b.DefRange, "Missing client credentials", "The %s grant needs client_id and client_secret (usually client_secret = env(\"NAME\")), or for client_credentials a client_assertion_key (private_key_jwt, usually file(\"key.pem\")).", o.Grant)
		}
		if o.Grant == upstream.GrantTokenExchange && d.missing(attrs["issuer"], o.Issuer) {
			d.errorf(b.DefRange, "Missing issuer", "The %s grant needs issuer: the authorization server that issued the callers' tokens (listen.auth's oauth issuer) and exchanges them.", o.Grant)
		}
	}
	return o
}

// checkServersWithHost runs the host's own checks (host.Config.Validate,
// which mcphost run applies at start and at every reload) on each server,
// so that what the host would refuse, such as an oauth grant with
// sessions = "shared" or a token exchange at an issuer listen.auth does
// not trust, is reported at the server's block, by validate too. A server
// whose block has an error, or any server when the listen block has one,
// is not checked: its zero values would only repeat that error.
func (d *decoder) checkServersWithHost(file *File, blocks []*hcl.Block, listen *hcl.Block) {
	if listen != nil && anyErrorIn(d.diags, []hcl.Range{blockRange(listen)}) {
		return
	}
	for i, s := range file.Host.Servers {
		block := blocks[i]
		if anyErrorIn(d.diags, []hcl.Range{blockRange(block)}) {
			continue
		}
		err := gateway.Config{Listen: file.Host.Listen, Servers: []upstream.ServerConfig{s}}.WithDefaults().Validate()
		if err == nil {
			continue
		}
		prefix := fmt.Sprintf("host: server 0 (%q): ", s.Name)
		for _, line := range strings.Split(err.Error(), "\n") {
			if msg, ok := strings.CutPrefix(line, prefix); ok {
				d.errorf(block.DefRange, "Invalid server", "Server %q: %s.", s.Name, strings.TrimSuffix(msg, "."))
			}
		}
	}
}

// blockRange is the whole of block, from its type to its closing brace.
func blockRange(block *hcl.Block) hcl.Range {
	if body, ok := block.Body.(*hclsyntax.Body); ok {
		return hcl.RangeOver(block.DefRange, body.SrcRange)
	}
	return block.DefRange
}
