package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/go-hclog"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcphost-project/mcphost/abi"
)

// Config is listen.auth.
type Config struct {
	Keys  []Key
	OAuth *OAuth // nil: API keys only
	// AdminGroups may read /status and the management endpoints; an
	// authenticated caller in none of them is refused there.
	AdminGroups []string
	// AdminKeysOnly counts only API keys' groups for AdminGroups: the
	// host's default admin group must not be one a token's claims can name.
	AdminKeysOnly bool
	// StdioKey names the key whose identity a stdio client has.
	StdioKey string
	// Users are the identities added at run time, whose keys are checked
	// after Keys; nil for none. The set is shared, not copied: a change
	// to it applies to every request from then on.
	Users *Users
}

// Enabled reports whether any credential is configured.
func (c *Config) Enabled() bool { return c != nil && (len(c.Keys) > 0 || c.OAuth != nil) }

// Check reports what is wrong with c.
func (c *Config) Check() error {
	seen := map[[32]byte]string{}
	names := map[string]bool{}
	for _, k := range c.Keys {
		if k.Subject == "" {
			return fmt.Errorf("key %q: subject is required", k.Name)
		}
		if other, ok := seen[k.SHA256]; ok {
			return fmt.Errorf("keys %q and %q are the same key", other, k.Name)
		}
		seen[k.SHA256] = k.Name
		names[k.Name] = true
	}
	if c.OAuth != nil {
		if err := c.OAuth.Check(); err != nil {
			return fmt.Errorf("oauth: %w", err)
		}
	}
	if c.StdioKey != "" && !names[c.StdioKey] {
		return fmt.Errorf("stdio_key %q names no key block", c.StdioKey)
	}
	return nil
}

// StdioIdentity is the identity of a stdio client: the StdioKey's, or nil.
func (c *Config) StdioIdentity() *Identity {
	for i := range c.Keys {
		if c.Keys[i].Name == c.StdioKey && c.StdioKey != "" {
			id := c.Keys[i].identity()
			id.Method = abi.AuthConfig
			return id
		}
	}
	return nil
}

// Authenticator checks the credentials of HTTP requests.
type Authenticator struct {
	cfg  Config
	keys keySet
	oa   *verifier
	log  hclog.Logger
}

// New returns an Authenticator for cfg.
func New(cfg Config, log hclog.Logger) (*Authenticator, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	a := &Authenticator{cfg: cfg, keys: keySet(cfg.Keys), log: log}
	if cfg.OAuth != nil {
		v, err := newVerifier(*cfg.OAuth, log)
		if err != nil {
			return nil, err
		}
		a.oa = v
	}
	return a, nil
}

// Failure is a refused request: what the client is answered.
type Failure struct {
	Status int    // 401 or 403
	Reason string // safe to show and log: it never holds a credential
	Scope  string // for 403: the scopes needed, space-separated
}

func (f *Failure) Error() string { return f.Reason }

// Authenticate returns the identity of r's bearer token.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (*Identity, *Failure) {
	token, ok := bearerToken(header)
	if !ok {
		if header == "" {
			return nil, &Failure{Status: http.StatusUnauthorized, Reason: "no bearer token"}
		}
		return nil, &Failure{Status: http.StatusUnauthorized, Reason: "the Authorization header is not a Bearer token"}
	}
	if k := a.keys.match(token); k != nil {
		return k.identity(), nil
	}
	if sk := a.cfg.Users.match(token); sk != nil {
		if sk.disabled {
			return nil, &Failure{Status: http.StatusForbidden, Reason: fmt.Sprintf("the API key's user %q is disabled", sk.identity.Subject)}
		}
		id := *sk.identity
		return &id, nil
	}
	if a.oa == nil {
		return nil, &Failure{Status: http.StatusForbidden, Reason: "invalid API key: it is none of listen.auth's keys"}
	}
	if !looksLikeJWT(token) {
		return nil, &Failure{Status: http.StatusUnauthorized, Reason: "invalid bearer token"}
	}
	id, err := a.oa.verify(ctx, token)
	if err != nil {
		var te *tokenError
		if errors.As(err, &te) {
			f := &Failure{Status: te.status, Reason: te.reason}
			if te.status == http.StatusForbidden {
				f.Scope = strings.Join(a.oa.o.Scopes, " ")
			}
			return nil, f
		}
		return nil, &Failure{Status: http.StatusUnauthorized, Reason: err.Error()}
	}
	return id, nil
}

// StdioIdentity is the identity of a stdio client (Config.StdioKey); nil
// for none, or for a nil Authenticator.
func (a *Authenticator) StdioIdentity() *Identity {
	if a == nil {
		return nil
	}
	return a.cfg.StdioIdentity()
}

// IsAdmin reports whether id may use /status and the management endpoints.
func (a *Authenticator) IsAdmin(id *Identity) bool {
	if id == nil || (a.cfg.AdminKeysOnly && id.Method != abi.AuthKey) || id.storedKey != "" {
		// A stored user is never an administrator, whatever its groups:
		// admin rights come from the config file alone, so the admin API
		// cannot make more administrators.
		return false
	}
	return id.InAny(a.cfg.AdminGroups)
}

// AdminGroups are the groups IsAdmin accepts.
func (a *Authenticator) AdminGroups() []string { return a.cfg.AdminGroups }

// CallbackPath is where upstream OAuth logins come back (host.CallbackPath).
const CallbackPath = "/oauth/callback"

// LoginPath is the page a login link of a running mcphost opens
// (host.LoginPath): there the person proves who they are before going on
// to the authorization server.
const LoginPath = "/oauth/login"

// SecretPath is the page a caller's secret link opens (host/usersecrets):
// there the person proves who they are and enters their secret.
const SecretPath = "/secret"

// SubjectOf is the caller subject a token's claims name, as Authenticate
// would read it, when they are from the issuer listen.auth.oauth trusts;
// ok is false for another issuer's claims, or with no oauth block.
func (a *Authenticator) SubjectOf(claims map[string]any) (subject string, ok bool) {
	if a == nil || a.oa == nil {
		return "", false
	}
	if iss, _ := claims["iss"].(string); iss != a.oa.o.Issuer {
		return "", false
	}
	subject, _ = claims[a.oa.o.SubjectClaim].(string)
	return subject, true
}

// MetadataPath is where the protected resource metadata is served
// (RFC 9728 section 3.1); the path-inserted form for /mcp is served too.
const MetadataPath = "/.well-known/oauth-protected-resource"

// Middleware authenticates every request but open ones (/healthz and the
// metadata), answers 401 or 403 with the WWW-Authenticate header the MCP
// authorization spec asks for, and passes the identity on in the request's
// context (FromContext) and as the go-sdk's TokenInfo, whose UserID the
// go-sdk's streamable handler binds its sessions to.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	var meta http.Handler
	if a.oa != nil {
		meta = sdkauth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:               a.oa.o.Audience,
			AuthorizationServers:   []string{a.oa.o.Issuer},
			ScopesSupported:        a.oa.o.Scopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "mcphost",
		})
	}
	tokenInfo := sdkauth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		id := FromContext(ctx)
		return &sdkauth.TokenInfo{UserID: id.Key(), Extra: map[string]any{"mcphost.identity": id}}, nil
	}, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz" || r.URL.Path == CallbackPath || r.URL.Path == LoginPath || r.URL.Path == SecretPath:
			// The OAuth callback and the login and secret pages carry
			// their own proof (the state of a login mcphost started and
			// the cookie of the person who proved who they are; the
			// credential entered in the page), and a browser sends no
			// key.
			next.ServeHTTP(w, r)
			return
		case meta != nil && (r.URL.Path == MetadataPath || strings.HasPrefix(r.URL.Path, MetadataPath+"/")):
			meta.ServeHTTP(w, r)
			return
		case meta == nil && strings.HasPrefix(r.URL.Path, "/.well-known/"):
			// Keys only: no OAuth metadata of any kind, found or
			// refused, so that an OAuth-capable client stops at the
			// 401 and says the key is wrong instead of starting a login.
			http.NotFound(w, r)
			return
		}
		id, f := a.Authenticate(r.Context(), r.Header.Get("Authorization"))
		if f != nil {
			a.refuse(w, r, f)
			return
		}
		tokenInfo.ServeHTTP(w, r.WithContext(NewContext(r.Context(), id)))
	})
}

// refuse answers a failed authentication.
func (a *Authenticator) refuse(w http.ResponseWriter, r *http.Request, f *Failure) {
	// A wrong API key on a listener of keys alone gets no challenge, as
	// there is nothing to obtain. MCP clients start an OAuth login on any
	// 401 (the Inspector's CLI does whatever the metadata says), so a key
	// that is not one is 403, which they report as it is.
	if a.oa != nil || f.Status != http.StatusForbidden {
		w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(a.challenge(r, f), ", "))
	}
	a.log.Debug("request refused", "status", f.Status, "reason", f.Reason, "path", r.URL.Path, "remote", r.RemoteAddr)
	http.Error(w, f.Reason, f.Status)
}

// challenge is the WWW-Authenticate parameters of a refusal (RFC 6750).
func (a *Authenticator) challenge(r *http.Request, f *Failure) []string {
	params := []string{}
	if a.oa != nil {
		params = append(params, fmt.Sprintf("resource_metadata=%q", a.metadataURL(r)))
	} else {
		params = append(params, `realm="mcphost"`)
	}
	switch {
	case f.Status == http.StatusForbidden:
		params = append(params, `error="insufficient_scope"`, fmt.Sprintf("scope=%q", f.Scope))
	case r.Header.Get("Authorization") != "":
		params = append(params, `error="invalid_token"`)
	}
	return params
}

// metadataURL is the absolute URL of the metadata for r's endpoint: for
// the configured audience when it is a URL (what clients were told to use,
// whatever proxy the request came through), else from the request.
func (a *Authenticator) metadataURL(r *http.Request) string {
	if u, err := url.Parse(a.oa.o.Audience); err == nil && u.IsAbs() && u.Host != "" {
		return u.Scheme + "://" + u.Host + MetadataPath + strings.TrimSuffix(u.Path, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + MetadataPath + r.URL.Path
}

// bearerToken takes the token of an Authorization header with the Bearer
// scheme, whose name is case-insensitive (RFC 9110 section 11.1).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != "" && !strings.ContainsAny(token, " \t")
}
