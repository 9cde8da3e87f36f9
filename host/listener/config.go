package listener

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/mcphost-project/mcphost/host/auth"
)

// Defaults of Config, applied by Config.WithDefaults.
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

// Config configures the downstream HTTP endpoint (the listen block).
type Config struct {
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

// WithDefaults returns a copy of l with every unset field given its default.
func (l Config) WithDefaults() Config {
	if l.SessionTimeout == 0 {
		l.SessionTimeout = DefaultSessionTimeout
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.ReadTimeout == 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.WriteTimeout == 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultConnIdleTimeout
	}
	if l.MaxConnections == 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.MaxSessions == 0 {
		l.MaxSessions = DefaultMaxDownstreamSessions
	}

	if l.DrainTimeout == 0 {
		l.DrainTimeout = DefaultDrainTimeout
	}
	return l
}

// Check reports every problem of l, in its own words (Config.Validate
// says where).
func (l Config) Check() []error {
	var errs []error
	if (l.TLSCert == "") != (l.TLSKey == "") {
		errs = append(errs, errors.New("set both tls_cert and tls_key, or neither"))
	}
	for _, o := range l.AllowedOrigins {
		if _, err := ParseOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("allowed_origins: %w", err))
		}
	}
	return errs
}

// DefaultRedirect is the default redirect_url of upstream logins: this
// host's own callback, on a loopback name when it listens on every
// interface.
func DefaultRedirect(l Config) string {
	addr := l.HTTP
	if addr == "" {
		addr = DefaultListenHTTP
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if l.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + auth.CallbackPath
}
