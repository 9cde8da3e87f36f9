package host

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/auth"
)

// Transports an upstream server can be reached by.
const (
	TransportStdio          = "stdio"
	TransportSSE            = "sse"
	TransportStreamableHTTP = "streamable-http"
	// TransportInternal connects to an in-process go-sdk server
	// (ServerConfig.Internal) over in-memory transports: how tool plugins
	// join the catalog as servers.
	TransportInternal = "internal"
)

// Prefix modes for exposed names.
const (
	PrefixAlways = "always" // exposed name = server + separator + tool
	PrefixNever  = "never"  // names pass through; a clash is a config error
)

// Session modes for an upstream server.
const (
	SessionsShared     = "shared"      // one upstream session for all clients
	SessionsPerClient  = "per_client"  // one upstream session per client: per identity when the caller has one, else per downstream session
	SessionsPerSession = "per_session" // one upstream session per downstream session, whoever the caller
)

// What to do when two servers list the same resource URI (or templates that
// both match a URI being read).
const (
	ResourceConflictFirst = "first" // the first server in config order serves it; a warning is logged
	ResourceConflictError = "error" // neither serves it: reading it is an error naming both
)

// Defaults applied by Config.WithDefaults.
const (
	DefaultListenHTTP      = "127.0.0.1:7700"
	DefaultSeparator       = "__"
	DefaultMaxNameLength   = 64
	DefaultCallTimeout     = 60 * time.Second
	DefaultIdleTimeout     = 30 * time.Minute
	DefaultConnectTimeout  = 30 * time.Second
	DefaultSessionTimeout  = 30 * time.Minute
	DefaultMaxBodyBytes    = 4 << 20
	DefaultProtocolVersion = "2025-11-25"
	DefaultMaxSessions     = 64 // per-client upstream sessions per server

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
	Servers   []ServerConfig // in config order, which is also tools/list order
	Tools     ToolsConfig    // also names prompts
	Resources ResourcesConfig
}

// ResourcesConfig controls how upstream resources are merged. Resource URIs
// are never renamed.
type ResourcesConfig struct {
	Conflict string // ResourceConflictFirst (default) or ResourceConflictError
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

// ServerConfig describes one upstream MCP server.
type ServerConfig struct {
	Name      string
	Transport string // TransportStdio, TransportSSE, TransportStreamableHTTP or TransportInternal

	// stdio
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string

	// internal: the server each connect opens a session of, over
	// mcp.NewInMemoryTransports. Reconfigure keeps an upstream whose
	// config is unchanged, the same *mcp.Server included.
	Internal *mcp.Server
	// InternalTools, when not nil, takes Internal's tools/call requests
	// on a fast path (memconn.go), unless Options.NoShortcuts.
	InternalTools InternalTools

	// sse and streamable-http
	URL     string
	Headers map[string]string
	// OAuth, for a streamable-http server that asks for an OAuth 2.1 access
	// token (MCP authorization): how mcphost gets one.
	OAuth *UpstreamOAuth

	Timeout         time.Duration // per call; 0 means DefaultCallTimeout
	IdleTimeout     time.Duration // disconnect when idle; negative means never
	ConnectTimeout  time.Duration // 0 means DefaultConnectTimeout
	Sessions        string        // SessionsShared (default), SessionsPerClient or SessionsPerSession
	MaxSessions     int           // per_client: most upstream sessions at once; 0 means DefaultMaxSessions
	ProtocolVersion string        // pinned upstream protocol; "" means DefaultProtocolVersion

	// SecretArgs (positions in Args) and SecretURL (the URL's path) are
	// secrets of a definition the admin API stores: the status and a
	// probe's result show them masked, as they do env and header values.
	SecretArgs []int
	SecretURL  bool
}

// ToolsConfig controls how upstream tools are exposed.
type ToolsConfig struct {
	Separator     string
	MaxNameLength int
	Prefix        string // PrefixAlways or PrefixNever
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
		c.Tools.Separator = DefaultSeparator
	}
	if c.Tools.MaxNameLength == 0 {
		c.Tools.MaxNameLength = DefaultMaxNameLength
	}
	if c.Tools.Prefix == "" {
		c.Tools.Prefix = PrefixAlways
	}
	if c.Resources.Conflict == "" {
		c.Resources.Conflict = ResourceConflictFirst
	}
	servers := make([]ServerConfig, len(c.Servers))
	for i, s := range c.Servers {
		if s.Transport == "" {
			s.Transport = TransportStdio
		}
		if s.Timeout == 0 {
			s.Timeout = DefaultCallTimeout
		}
		if s.IdleTimeout == 0 {
			s.IdleTimeout = DefaultIdleTimeout
		}
		if s.ConnectTimeout == 0 {
			s.ConnectTimeout = DefaultConnectTimeout
		}
		if s.Sessions == "" {
			s.Sessions = SessionsShared
			if s.OAuth != nil && (s.OAuth.Mode == OAuthPerUser || s.OAuth.Grant == GrantTokenExchange) {
				// Each caller's token needs its own upstream session.
				s.Sessions = SessionsPerClient
			}
		}
		if s.ProtocolVersion == "" {
			s.ProtocolVersion = DefaultProtocolVersion
		}
		if s.MaxSessions == 0 {
			s.MaxSessions = DefaultMaxSessions
		}
		servers[i] = s
	}
	c.Servers = servers
	return c
}

// Validate reports every problem in c at once, for embedders that build a
// Config in Go. (The HCL decoder reports the same problems with source
// positions before a Config is ever built.)
// The grants of UpstreamOAuth.Grant; without one, mcphost logs in with
// the authorization code flow.
const (
	// GrantClientCredentials: machine to machine, one token for the gateway.
	GrantClientCredentials = "client_credentials"
	// GrantTokenExchange: each caller's OAuth access token (listen.auth's
	// oauth) is exchanged at its issuer (RFC 8693) for one for the server;
	// the gateway's own client_credentials token lists its tools.
	GrantTokenExchange = "token_exchange"
)

// The login modes of UpstreamOAuth.Mode.
const (
	// OAuthShared: one grant, the gateway's, serves every caller.
	OAuthShared = "shared"
	// OAuthPerUser: each caller authorizes for themself, and their requests
	// go over their own upstream session with their own token. The
	// gateway's grant, when it has one, only lists what the server offers.
	OAuthPerUser = "per_user"
)

// UpstreamOAuth is how mcphost authorizes itself to an OAuth-protected
// server. With the client_credentials grant (machine to machine), it finds
// the authorization server from the server's 401 and its protected
// resource metadata (RFC 9728, RFC 8414), gets a token with the client's
// id and secret, and gets a new one when the server refuses the old.
//
// Without a grant, it logs in with the authorization code flow and PKCE
// (Mode OAuthShared: one grant for the gateway; OAuthPerUser: one per
// caller identity besides), registering itself
// dynamically unless ClientID is given, and keeps the grant in the host's
// grants store (Options.Grants).
type UpstreamOAuth struct {
	Grant        string // GrantClientCredentials, GrantTokenExchange, or "" for a login
	Mode         string // OAuthShared (the default for a login) or OAuthPerUser
	ClientID     string // optional for a login: dynamic registration otherwise
	ClientSecret string // never logged, shown in status or errors
	// ClientAssertionKey is a PEM private key: with it, the
	// client_credentials grant authenticates the client with a signed JWT
	// (private_key_jwt, RFC 7523) instead of ClientSecret.
	ClientAssertionKey string
	ClientAssertionAlg string // optional: the key's own (ES256 for P-256, RS256 for RSA)
	Issuer             string // optional: refuse an authorization server other than this one
	Scopes             []string
	RedirectURL        string // optional: the host's own /oauth/callback by default
	// Audience is the audience a token exchange asks for (RFC 8693); the
	// server's URL by default, which is also the resource (RFC 8707).
	Audience string
	// ClientMetadataURL is an https URL where a Client ID Metadata Document
	// describing mcphost is published: used as the client_id with
	// authorization servers that accept those, before registering.
	ClientMetadataURL string
}

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
		switch s.Transport {
		case TransportStdio:
			if s.Command == "" {
				errs = append(errs, fmt.Errorf("host: %s: transport %q needs a command", where, s.Transport))
			}
		case TransportInternal:
			if s.Internal == nil {
				errs = append(errs, fmt.Errorf("host: %s: transport %q needs an in-process server", where, s.Transport))
			}
			if s.OAuth != nil {
				errs = append(errs, fmt.Errorf("host: %s: oauth needs transport %q", where, TransportStreamableHTTP))
			}
		case TransportSSE, TransportStreamableHTTP:
			if s.OAuth != nil {
				if s.Transport != TransportStreamableHTTP {
					errs = append(errs, fmt.Errorf("host: %s: oauth needs transport %q", where, TransportStreamableHTTP))
				} else if err := checkOAuth(s.OAuth); err != nil {
					errs = append(errs, fmt.Errorf("host: %s: oauth: %w", where, err))
				} else if callerTokens(s.OAuth) && s.Sessions == SessionsShared {
					errs = append(errs, fmt.Errorf("host: %s: oauth %s sends each caller's requests with their own token, over their own session: remove sessions = %q (%q is the default with it)", where, oauthKind(s.OAuth), SessionsShared, SessionsPerClient))
				} else if s.OAuth.Grant == GrantTokenExchange {
					if err := checkExchangeIssuer(c.Listen, s.OAuth); err != nil {
						errs = append(errs, fmt.Errorf("host: %s: oauth: %w", where, err))
					}
				}
			}
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("host: %s: transport %q needs an http(s) url, got %q", where, s.Transport, s.URL))
			}
		default:
			errs = append(errs, fmt.Errorf("host: %s: unknown transport %q (want %q, %q or %q)", where, s.Transport, TransportStdio, TransportSSE, TransportStreamableHTTP))
		}
		if s.Sessions != SessionsShared && s.Sessions != SessionsPerClient && s.Sessions != SessionsPerSession {
			errs = append(errs, fmt.Errorf("host: %s: unknown sessions mode %q (want %q, %q or %q)", where, s.Sessions, SessionsShared, SessionsPerClient, SessionsPerSession))
		}
		if s.MaxSessions < 0 {
			errs = append(errs, fmt.Errorf("host: %s: max_sessions must be positive", where))
		}
		if s.Timeout < 0 || s.ConnectTimeout < 0 {
			errs = append(errs, fmt.Errorf("host: %s: timeouts must be positive", where))
		}
	}
	if c.Tools.Prefix != PrefixAlways && c.Tools.Prefix != PrefixNever {
		errs = append(errs, fmt.Errorf("host: tools: unknown prefix %q (want %q or %q)", c.Tools.Prefix, PrefixAlways, PrefixNever))
	}
	if c.Resources.Conflict != ResourceConflictFirst && c.Resources.Conflict != ResourceConflictError {
		errs = append(errs, fmt.Errorf("host: resources: unknown conflict %q (want %q or %q)", c.Resources.Conflict, ResourceConflictFirst, ResourceConflictError))
	}
	if c.Tools.Separator != sanitize(c.Tools.Separator) {
		errs = append(errs, fmt.Errorf("host: tools: separator %q may only use A-Z, a-z, 0-9, _ and -", c.Tools.Separator))
	}
	if c.Tools.MaxNameLength < 16 {
		errs = append(errs, fmt.Errorf("host: tools: max_name_length %d is too small (at least 16)", c.Tools.MaxNameLength))
	}
	return errors.Join(errs...)
}
