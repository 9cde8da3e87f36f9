package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/go-hclog"

	"github.com/mcphost-project/mcphost/abi"
)

// OAuth configures mcphost as an OAuth 2.1 resource server: access tokens
// are JWTs signed by Issuer's keys, for Audience.
type OAuth struct {
	Issuer   string   // the authorization server's issuer identifier (a URL)
	Audience string   // the resource (RFC 8707): tokens must name it in aud
	Scopes   []string // every one must be granted; a token without one gets 403 insufficient_scope

	SubjectClaim string            // default "sub"
	GroupsClaim  string            // default "groups"; a string of space-separated names or an array
	Attributes   map[string]string // caller attribute → claim

	// JWKSURL skips discovery: the issuer's key set is read from here
	// rather than from its RFC 8414 or OpenID Connect metadata.
	JWKSURL string
	// ClockSkew is the leeway on exp, nbf and iat; default DefaultClockSkew.
	ClockSkew time.Duration
	// Algorithms are the signature algorithms accepted; default
	// DefaultAlgorithms. Symmetric ones (HS256...) and "none" are never
	// accepted: a resource server holds no shared secret.
	Algorithms []string
	// HTTPClient fetches metadata and keys; default a client with a 10 s
	// timeout.
	HTTPClient *http.Client
}

// Defaults of OAuth.
const (
	DefaultClockSkew = 30 * time.Second
	// jwksMinRefresh bounds how often an unknown kid may refetch the key
	// set: a flood of tokens with made-up kids costs one fetch per period.
	jwksMinRefresh = 10 * time.Second
	// jwksMaxAge is how long a key set is used before it is fetched again.
	jwksMaxAge    = time.Hour
	maxTokenBytes = 16 << 10
)

// DefaultAlgorithms are the asymmetric JWS algorithms accepted by default.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Check reports what is wrong with o, naming the field.
func (o *OAuth) Check() error {
	if o.Issuer == "" {
		return errors.New("issuer is required: the authorization server's issuer URL")
	}
	if err := checkHTTPSURL(o.Issuer); err != nil {
		return fmt.Errorf("issuer: %w", err)
	}
	if o.Audience == "" {
		return errors.New("audience is required: this server's resource identifier, like \"https://mcp.example.com/mcp\"; tokens for other audiences are refused")
	}
	if o.JWKSURL != "" {
		if err := checkHTTPSURL(o.JWKSURL); err != nil {
			return fmt.Errorf("jwks_url: %w", err)
		}
	}
	for _, a := range o.Algorithms {
		if !slices.Contains(DefaultAlgorithms, a) {
			return fmt.Errorf("algorithm %q is not accepted: use some of %s (symmetric algorithms and \"none\" never are)", a, strings.Join(DefaultAlgorithms, ", "))
		}
	}
	return nil
}

// tokenError is a refused token: status 401 (invalid) or 403 (scope).
type tokenError struct {
	status int
	reason string // for the log and the client; never the token
}

func (e *tokenError) Error() string { return e.reason }

// verifier validates access tokens against one issuer.
type verifier struct {
	o    OAuth
	algs []jose.SignatureAlgorithm
	keys *keyCache
	now  func() time.Time

	// seen remembers tokens that verified, by their SHA-256, until they
	// expire or for seenMaxAge: a client sends the same token with every
	// request, and checking its signature again costs tens of
	// microseconds (docs/BENCHMARKS.md).
	mu   sync.Mutex
	seen map[[32]byte]seenToken
}

type seenToken struct {
	id    *Identity
	until time.Time
}

const (
	seenMaxAge  = 5 * time.Minute // a key the issuer withdraws stops working within this
	seenMaxSize = 4096
)

// remembered returns the identity of a token that verified before.
func (v *verifier) remembered(sum [32]byte) *Identity {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.seen[sum]
	if !ok {
		return nil
	}
	if !v.now().Before(t.until) {
		delete(v.seen, sum)
		return nil
	}
	return t.id
}

func (v *verifier) remember(sum [32]byte, id *Identity, exp time.Time) {
	until := v.now().Add(seenMaxAge)
	if exp.Before(until) {
		until = exp
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seen = map[[32]byte]seenToken{}
	}
	if len(v.seen) >= seenMaxSize {
		for k := range v.seen { // drop one at random: bounded, and no order to keep
			delete(v.seen, k)
			break
		}
	}
	v.seen[sum] = seenToken{id: id, until: until}
}

func newVerifier(o OAuth, log hclog.Logger) (*verifier, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.SubjectClaim == "" {
		o.SubjectClaim = "sub"
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	if o.ClockSkew == 0 {
		o.ClockSkew = DefaultClockSkew
	}
	if len(o.Algorithms) == 0 {
		o.Algorithms = DefaultAlgorithms
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	v := &verifier{o: o, now: time.Now}
	for _, a := range o.Algorithms {
		v.algs = append(v.algs, jose.SignatureAlgorithm(a))
	}
	v.keys = newKeyCache(o.Issuer, o.JWKSURL, o.HTTPClient, log)
	return v, nil
}

// looksLikeJWT reports whether token has the shape of a compact JWS.
func looksLikeJWT(token string) bool {
	return strings.Count(token, ".") == 2 && strings.HasPrefix(token, "eyJ")
}

// verify validates token and returns its caller.
func (v *verifier) verify(ctx context.Context, token string) (*Identity, error) {
	sum := sha256.Sum256([]byte(token))
	if id := v.remembered(sum); id != nil {
		return id, nil
	}
	id, exp, err := v.check(ctx, token)
	if err != nil {
		return nil, err
	}
	id.bearer, id.bearerExpiry = token, exp
	v.remember(sum, id, exp)
	return id, nil
}

// accessTokenType reports whether a JWT's typ header allows an access
// token: RFC 9068's at+jwt, or none or the generic JWT that most identity
// providers still write (whose claims are then checked for an ID token's,
// idTokenClaims). Any other type (an ID token's id_token+jwt, a logout
// token's, a security event's) is refused.
func accessTokenType(typ string) bool {
	switch strings.ToLower(typ) {
	case "", "jwt", "at+jwt", "application/at+jwt":
		return true
	}
	return false
}

// idTokenClaims reports whether claims are an OpenID Connect ID token's: a
// nonce, at_hash or c_hash (OIDC Core 2, 3.3.2.11), which no access token
// carries, or Keycloak's typ claim "ID".
func idTokenClaims(claims map[string]any) bool {
	for _, k := range []string{"nonce", "at_hash", "c_hash"} {
		if _, ok := claims[k]; ok {
			return true
		}
	}
	typ, _ := claims["typ"].(string)
	return strings.EqualFold(typ, "ID")
}

// check validates token fully: signature, issuer, audience, times, scopes.
// It returns the caller and the token's expiry.
func (v *verifier) check(ctx context.Context, token string) (*Identity, time.Time, error) {
	invalid := func(format string, args ...any) error {
		return &tokenError{status: http.StatusUnauthorized, reason: fmt.Sprintf(format, args...)}
	}
	if len(token) > maxTokenBytes {
		return nil, time.Time{}, invalid("access token of %d bytes is over the limit of %d", len(token), maxTokenBytes)
	}
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return nil, time.Time{}, invalid("access token is not a JWT signed with an accepted algorithm (%s): %v", strings.Join(v.o.Algorithms, ", "), err)
	}
	if len(tok.Headers) != 1 {
		return nil, time.Time{}, invalid("access token has %d signatures, want 1", len(tok.Headers))
	}
	if typ, _ := tok.Headers[0].ExtraHeaders[jose.HeaderType].(string); !accessTokenType(typ) {
		return nil, time.Time{}, invalid("the token's type is %q, not an access token's (at+jwt, RFC 9068)", typ)
	}
	key, err := v.keys.key(ctx, tok.Headers[0].KeyID, tok.Headers[0].Algorithm)
	if err != nil {
		return nil, time.Time{}, invalid("%v", err)
	}
	var std jwt.Claims
	var all map[string]any
	if err := tok.Claims(key.Key, &std, &all); err != nil {
		return nil, time.Time{}, invalid("access token signature does not verify: %v", err)
	}
	if std.Expiry == nil {
		return nil, time.Time{}, invalid("access token has no exp claim")
	}
	if idTokenClaims(all) {
		return nil, time.Time{}, invalid("the token is an OpenID Connect ID token (it has nonce, at_hash, c_hash or typ ID), which says who signed in to a client, not what a client may call: send an access token")
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: v.o.Issuer, AnyAudience: jwt.Audience{v.o.Audience}, Time: v.now()}, v.o.ClockSkew)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, time.Time{}, invalid("access token was issued by %q, not %q", std.Issuer, v.o.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, time.Time{}, invalid("access token is for audience %q, not this server (%q)", []string(std.Audience), v.o.Audience)
	case errors.Is(err, jwt.ErrExpired):
		return nil, time.Time{}, invalid("access token expired at %s", std.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, time.Time{}, invalid("access token is not valid yet")
	case err != nil:
		return nil, time.Time{}, invalid("access token claims: %v", err)
	}
	id := &Identity{Method: abi.AuthOAuth}
	id.Subject, _ = all[v.o.SubjectClaim].(string)
	if id.Subject == "" {
		return nil, time.Time{}, invalid("access token has no %q claim naming the caller", v.o.SubjectClaim)
	}
	id.Groups = claimStrings(all[v.o.GroupsClaim])
	for attr, claim := range v.o.Attributes {
		if s, ok := claimString(all[claim]); ok {
			if id.Attributes == nil {
				id.Attributes = map[string]string{}
			}
			id.Attributes[attr] = s
		}
	}
	granted := tokenScopes(all)
	for _, s := range v.o.Scopes {
		if !slices.Contains(granted, s) {
			return nil, time.Time{}, &tokenError{status: http.StatusForbidden, reason: fmt.Sprintf("access token lacks scope %q", s)}
		}
	}
	return id, std.Expiry.Time(), nil
}

// tokenScopes reads the granted scopes: "scope" (RFC 9068, space-separated)
// or "scp" (a string or an array, as some providers write it).
func tokenScopes(claims map[string]any) []string {
	if s := claimStrings(claims["scope"]); len(s) > 0 {
		return s
	}
	return claimStrings(claims["scp"])
}

// claimStrings reads a claim that is a space-separated string or an array
// of strings.
func claimStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// claimString renders a scalar claim as a string.
func claimString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool, float64, json.Number:
		return fmt.Sprint(v), true
	}
	return "", false
}
