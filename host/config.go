package host

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcphost-project/mcphost/host/catalog"

	"github.com/mcphost-project/mcphost/host/upstream"

	"github.com/mcphost-project/mcphost/host/auth"
)

// Defaults applied by Config.WithDefaults.
const (
	DefaultListenHTTP     = "127.0.0.1:7700"
	DefaultSessionTimeout = 30 * time.Minute
	DefaultMaxBodyBytes   = 4 << 20

	DefaultReadTimeout           = 30 * time.Second
	DefaultWriteTimeout          = 30 * time.Second
	DefaultConnIdleTimeout       = 2 * time.Minute
	DefaultMaxConnections        = 1024
	DefaultMaxDownstreamSessions = 4096
	DefaultDrainTimeout          = 20 * time.Second
)

// Config is everything the host needs, as a Go value. The CLI decodes it from
// HCL (host/config); embedders build it directly.
type Config struct {
	Listen    Listen
	Servers   []upstream.ServerConfig // in config order, which is also tools/list order
	Tools     catalog.ToolsConfig     // also names prompts
	Resources catalog.ResourcesConfig
}

// Listen configures the downstream HTTP endpoint.
type Listen struct {
	HTTP           string        // address for streamable HTTP (/mcp) and SSE (/sse)
	AuthToken      string        // optional bearer token; empty disables auth. Shorthand for one key of Auth (subject "token", group "admins")
	Auth           *auth.Config  // API keys and OAuth; nil with AuthToken empty disables auth
	SessionTimeout time.Duration // idle downstream sessions are closed after this
	MaxBodyBytes   int64         // request body limit

	// Bounds on clients (serve.go, limits.go). Zero takes the default.
	ReadTimeout    time.Duration // to read a request's headers, and again its body
	WriteTimeout   time.Duration // one write may block this long; a session blocked this long is closed
	IdleTimeout    time.Duration // a keep-alive connection with no request is closed after this
	MaxConnections int           // open connections; at the cap idle ones are closed, then new ones refused
	MaxSessions    int           // downstream MCP sessions (HTTP and SSE); more are refused with 503
	// One caller (an identity, or a remote address without listen.auth)
	// may hold at most these of the above, so that it cannot take what
	// every other client needs (limits.go); more are refused with 429.
	// Zero takes, for an identity, a quarter of MaxConnections and
	// MaxSessions, and for an address no limit: without listen.auth every
	// local client, or every client behind one proxy, is one address.
	MaxStreamsPerCaller  int // requests in flight: event streams and calls being answered
	MaxSessionsPerCaller int
	// DrainTimeout bounds how long, after SIGTERM, the requests in flight
	// may take to finish before the process stops (Host.Drain).
	DrainTimeout time.Duration

	// AllowedOrigins are browser origins ("https://app.example.com") that
	// may call besides the defaults: the request's own host, and loopback
	// origins on a loopback listener. See ParseOrigin.
	AllowedOrigins []string

	// TLSCert and TLSKey, both set, serve HTTPS with this certificate and
	// key (PEM files), which are read again when they change.
	TLSCert, TLSKey string
}

// WithDefaults returns a copy of c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if c.Listen.SessionTimeout == 0 {
		c.Listen.SessionTimeout = DefaultSessionTimeout
	}
	if c.Listen.MaxBodyBytes == 0 {
		c.Listen.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Listen.ReadTimeout == 0 {
		c.Listen.ReadTimeout = DefaultReadTimeout
	}
	if c.Listen.WriteTimeout == 0 {
		c.Listen.WriteTimeout = DefaultWriteTimeout
	}
	if c.Listen.IdleTimeout == 0 {
		c.Listen.IdleTimeout = DefaultConnIdleTimeout
	}
	if c.Listen.MaxConnections == 0 {
		c.Listen.MaxConnections = DefaultMaxConnections
	}
	if c.Listen.MaxSessions == 0 {
		c.Listen.MaxSessions = DefaultMaxDownstreamSessions
	}

	if c.Listen.DrainTimeout == 0 {
		c.Listen.DrainTimeout = DefaultDrainTimeout
	}
	if c.Tools.Separator == "" {
		c.Tools.Separator = catalog.DefaultSeparator
	}
	if c.Tools.MaxNameLength == 0 {
		c.Tools.MaxNameLength = catalog.DefaultMaxNameLength
	}
	if c.Tools.Prefix == "" {
		c.Tools.Prefix = catalog.PrefixAlways
	}
	if c.Resources.Conflict == "" {
		c.Resources.Conflict = catalog.ResourceConflictFirst
	}
	servers := make([]upstream.ServerConfig, len(c.Servers))
	for i, s := range c.Servers {
		servers[i] = s.WithDefaults()
	}
	c.Servers = servers
	return c
}

// Validate reports every problem in c at once, for embedders that build a
// Config in Go. (The HCL decoder reports the same problems with source
// positions before a Config is ever built.)

func (c Config) Validate() error {
	var errs []error
	if (c.Listen.TLSCert == "") != (c.Listen.TLSKey == "") {
		errs = append(errs, errors.New("host: listen: set both tls_cert and tls_key, or neither"))
	}
	for _, o := range c.Listen.AllowedOrigins {
		if _, err := ParseOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("host: listen: allowed_origins: %w", err))
		}
	}
	seen := make(map[string]bool, len(c.Servers))
	for i, s := range c.Servers {
		where := fmt.Sprintf("server %d (%q)", i, s.Name)
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("host: %s: a name is required", where))
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("host: %s: duplicate server name", where))
		}
		seen[s.Name] = true
		for _, err := range s.Check() {
			errs = append(errs, fmt.Errorf("host: %s: %w", where, err))
		}
		if s.OAuth != nil && s.OAuth.Grant == upstream.GrantTokenExchange && s.Transport == upstream.TransportStreamableHTTP && upstream.CheckOAuth(s.OAuth) == nil && !(upstream.CallerTokens(s.OAuth) && s.Sessions == upstream.SessionsShared) {
			if err := checkExchangeIssuer(c.Listen, s.OAuth); err != nil {
				errs = append(errs, fmt.Errorf("host: %s: oauth: %w", where, err))
			}
		}
	}
	if c.Tools.Prefix != catalog.PrefixAlways && c.Tools.Prefix != catalog.PrefixNever {
		errs = append(errs, fmt.Errorf("host: tools: unknown prefix %q (want %q or %q)", c.Tools.Prefix, catalog.PrefixAlways, catalog.PrefixNever))
	}
	if c.Resources.Conflict != catalog.ResourceConflictFirst && c.Resources.Conflict != catalog.ResourceConflictError {
		errs = append(errs, fmt.Errorf("host: resources: unknown conflict %q (want %q or %q)", c.Resources.Conflict, catalog.ResourceConflictFirst, catalog.ResourceConflictError))
	}
	if c.Tools.Separator != catalog.Sanitize(c.Tools.Separator) {
		errs = append(errs, fmt.Errorf("host: tools: separator %q may only use A-Z, a-z, 0-9, _ and -", c.Tools.Separator))
	}
	if c.Tools.MaxNameLength < 16 {
		errs = append(errs, fmt.Errorf("host: tools: max_name_length %d is too small (at least 16)", c.Tools.MaxNameLength))
	}
	return errors.Join(errs...)
}

// checkExchangeIssuer requires callers whose tokens a token exchange server
// can exchange: listen.auth must take OAuth tokens from the issuer the
// server's oauth block trusts.
func checkExchangeIssuer(l Listen, o *upstream.UpstreamOAuth) error {
	if l.Auth == nil || l.Auth.OAuth == nil {
		return fmt.Errorf("the %s grant exchanges the callers' OAuth tokens: add listen.auth.oauth with issuer = %q", upstream.GrantTokenExchange, o.Issuer)
	}
	if strings.TrimSuffix(l.Auth.OAuth.Issuer, "/") != strings.TrimSuffix(o.Issuer, "/") {
		return fmt.Errorf("the %s grant exchanges tokens at issuer %q, but listen.auth.oauth takes tokens from %q: they must be the same", upstream.GrantTokenExchange, o.Issuer, l.Auth.OAuth.Issuer)
	}
	return nil
}
