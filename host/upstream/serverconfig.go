package upstream

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
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

// Session modes for an upstream server.
const (
	SessionsShared     = "shared"      // one upstream session for all clients
	SessionsPerClient  = "per_client"  // one upstream session per client: per identity when the caller has one, else per downstream session
	SessionsPerSession = "per_session" // one upstream session per downstream session, whoever the caller
)

// Defaults of a server's settings, applied by ServerConfig.WithDefaults.
const (
	DefaultCallTimeout     = 60 * time.Second
	DefaultIdleTimeout     = 30 * time.Minute
	DefaultConnectTimeout  = 30 * time.Second
	DefaultProtocolVersion = "2025-11-25"
	DefaultMaxSessions     = 64 // per-client upstream sessions per server
)

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

	// Caller, when set, gives each caller (identity) its own copy of the
	// settings above that reach the server: command, args, env, cwd, url
	// and headers may hold the caller's values (caller templates:
	// ${caller.subject} in HCL). Such a server is per identity: sessions
	// "per_client" by default, never "shared"; a caller without an
	// identity is refused. The fields themselves hold the template as
	// written, for status and logs. The server's own session, which lists
	// what it offers, is filled in for no caller (CallerTemplate.Apply with
	// a nil identity).
	Caller CallerTemplate

	// SecretArgs (positions in Args) and SecretURL (the URL's path) are
	// secrets of a definition the admin API stores: the status and a
	// probe's result show them masked, as they do env and header values.
	SecretArgs []int
	SecretURL  bool
}

// A CallerTemplate fills a server's settings in for one caller.
type CallerTemplate interface {
	// Apply returns s with id's values filled in, secrets being the
	// values of the caller's secrets it reads (Secrets). id is nil for the
	// server's own session: the caller's values are then empty.
	Apply(s ServerConfig, id *auth.Identity, secrets map[string]string) (ServerConfig, error)
	// Secrets names the caller's secrets the template reads
	// (${caller.secrets.NAME}), sorted; none for most templates.
	Secrets() []string
	// String is the template as written: what tells two definitions apart
	// on a reload, and all that status and logs show of it.
	String() string
}

// Same reports whether a and b define the same server: a reload keeps an
// upstream whose definition is the same (templates compared as written).
func Same(a, b ServerConfig) bool {
	if (a.Caller == nil) != (b.Caller == nil) || a.Caller != nil && a.Caller.String() != b.Caller.String() {
		return false
	}
	a.Caller, b.Caller = nil, nil
	return reflect.DeepEqual(a, b)
}

// WithDefaults returns a copy of s with every unset field given its default.
func (s ServerConfig) WithDefaults() ServerConfig {
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
	if s.Sessions == "" && s.Caller != nil {
		s.Sessions = SessionsPerClient // each caller their own values
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
	return s
}

// Check reports every problem of s alone, as the server's own words; a
// Config adds where (Config.Validate), and what depends on the listener.
func (s ServerConfig) Check() []error {
	var errs []error
	switch s.Transport {
	case TransportStdio:
		if s.Command == "" {
			errs = append(errs, fmt.Errorf("transport %q needs a command", s.Transport))
		}
	case TransportInternal:
		if s.Internal == nil {
			errs = append(errs, fmt.Errorf("transport %q needs an in-process server", s.Transport))
		}
		if s.OAuth != nil {
			errs = append(errs, fmt.Errorf("oauth needs transport %q", TransportStreamableHTTP))
		}
	case TransportSSE, TransportStreamableHTTP:
		if s.OAuth != nil {
			if s.Transport != TransportStreamableHTTP {
				errs = append(errs, fmt.Errorf("oauth needs transport %q", TransportStreamableHTTP))
			} else if err := CheckOAuth(s.OAuth); err != nil {
				errs = append(errs, fmt.Errorf("oauth: %w", err))
			} else if CallerTokens(s.OAuth) && s.Sessions == SessionsShared {
				errs = append(errs, fmt.Errorf("oauth %s sends each caller's requests with their own token, over their own session: remove sessions = %q (%q is the default with it)", oauthKind(s.OAuth), SessionsShared, SessionsPerClient))
			}
		}
		if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("transport %q needs an http(s) url, got %q", s.Transport, s.URL))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown transport %q (want %q, %q or %q)", s.Transport, TransportStdio, TransportSSE, TransportStreamableHTTP))
	}
	if s.Sessions != SessionsShared && s.Sessions != SessionsPerClient && s.Sessions != SessionsPerSession {
		errs = append(errs, fmt.Errorf("unknown sessions mode %q (want %q, %q or %q)", s.Sessions, SessionsShared, SessionsPerClient, SessionsPerSession))
	}
	if s.Caller != nil && s.Sessions == SessionsShared {
		errs = append(errs, fmt.Errorf("its settings use the caller's values (caller templates), which give each caller their own upstream: remove sessions = %q (%q is the default with them)", SessionsShared, SessionsPerClient))
	}
	if s.MaxSessions < 0 {
		errs = append(errs, fmt.Errorf("max_sessions must be positive"))
	}
	if s.Timeout < 0 || s.ConnectTimeout < 0 {
		errs = append(errs, fmt.Errorf("timeouts must be positive"))
	}

	return errs
}

// validate is check as one error in Config.Validate's words, for a server
// alone (Probe): what depends on the listener is not checked.
func (s ServerConfig) validate() error {
	var errs []error
	for _, err := range s.Check() {
		errs = append(errs, fmt.Errorf("host: server 0 (%q): %w", s.Name, err))
	}
	return errors.Join(errs...)
}

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
