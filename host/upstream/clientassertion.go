package upstream

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// private_key_jwt client authentication (RFC 7523 section 2.2, SEP-1046)
// for the client_credentials grant: mcphost proves it is the client with a
// JWT it signs with its private key, instead of a shared secret.
//
// The go-sdk's client credentials handler does the discovery (the 401,
// RFC 9728, RFC 8414) and the token request, but authenticates clients
// with a secret only. So it is given an HTTP client whose transport turns
// its token request into one authenticated by assertion: the secret the
// handler was given is a placeholder that never leaves the process, and
// is taken off the request (Basic header or form) before it is sent.

// assertionType is RFC 7523's client_assertion_type.
const assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionPlaceholder is the secret the go-sdk's handler is given.
const assertionPlaceholder = "mcphost-private-key-jwt"

// assertionLifetime bounds a client assertion: one token request.
const assertionLifetime = 2 * time.Minute

// clientSigner signs client assertions for one client.
type clientSigner struct {
	clientID string
	signer   jose.Signer
}

// ParseClientKey reads a PEM private key (PKCS #8, SEC 1 EC or PKCS #1
// RSA) and the algorithm it signs with: alg when given, else ES256, ES384
// or ES512 for its curve, RS256 for RSA.
func ParseClientKey(pemText, alg string) (crypto.Signer, jose.SignatureAlgorithm, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, "", errors.New("client_assertion_key is not a PEM private key")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, "", fmt.Errorf("client_assertion_key is a PEM %q, not a private key", block.Type)
	}
	if err != nil {
		return nil, "", fmt.Errorf("client_assertion_key: %w", err)
	}
	var want jose.SignatureAlgorithm
	var signer crypto.Signer
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		signer = k
		switch k.Curve {
		case elliptic.P256():
			want = jose.ES256
		case elliptic.P384():
			want = jose.ES384
		case elliptic.P521():
			want = jose.ES512
		default:
			return nil, "", errors.New("client_assertion_key: an EC key on an unsupported curve")
		}
	case *rsa.PrivateKey:
		signer, want = k, jose.RS256
		if alg == "PS256" || alg == "RS384" || alg == "RS512" || alg == "PS384" || alg == "PS512" {
			want = jose.SignatureAlgorithm(alg)
		}
	default:
		return nil, "", fmt.Errorf("client_assertion_key: %T keys are not supported (want EC or RSA)", key)
	}
	if alg != "" && jose.SignatureAlgorithm(alg) != want {
		return nil, "", fmt.Errorf("client_assertion_alg %q does not fit the key (it signs with %s)", alg, want)
	}
	return signer, want, nil
}

func newClientSigner(clientID, pemText, alg string) (*clientSigner, error) {
	key, a, err := ParseClientKey(pemText, alg)
	if err != nil {
		return nil, err
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: a, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	return &clientSigner{clientID: clientID, signer: s}, nil
}

// assertion is a fresh client assertion for the token endpoint aud.
func (s *clientSigner) assertion(aud string) (string, error) {
	var id [16]byte
	_, _ = rand.Read(id[:])
	now := time.Now()
	return jwt.Signed(s.signer).Claims(jwt.Claims{
		Issuer:   s.clientID,
		Subject:  s.clientID,
		Audience: jwt.Audience{aud},
		ID:       hex.EncodeToString(id[:]),
		IssuedAt: jwt.NewNumericDate(now),
		Expiry:   jwt.NewNumericDate(now.Add(assertionLifetime)),
	}).Serialize()
}

// assertionTransport authenticates the client_credentials token requests
// that pass through it with a client assertion. The assertion's audience
// is the authorization server's issuer (RFC 7523bis): the transport reads
// it from the metadata the handler fetches through it.
type assertionTransport struct {
	base   http.RoundTripper
	signer *clientSigner

	mu      sync.Mutex
	issuers map[string]string // token endpoint -> issuer
}

func newAssertionTransport(base http.RoundTripper, s *clientSigner) *assertionTransport {
	return &assertionTransport{base: base, signer: s, issuers: map[string]string{}}
}

func (t *assertionTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/.well-known/") {
		return t.readMetadata(r)
	}
	if r.Method != http.MethodPost || r.Body == nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("grant_type") != "client_credentials" {
		r2 := r.Clone(r.Context())
		r2.Body, r2.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		return t.base.RoundTrip(r2)
	}
	// The issuer is the audience; the token endpoint (RFC 7523 section 3)
	// when its metadata was not seen.
	endpoint := *r.URL
	endpoint.RawQuery, endpoint.Fragment = "", ""
	t.mu.Lock()
	aud := t.issuers[endpoint.String()]
	t.mu.Unlock()
	if aud == "" {
		aud = endpoint.String()
	}
	a, err := t.signer.assertion(aud)
	if err != nil {
		return nil, fmt.Errorf("signing the client assertion: %w", err)
	}
	form.Del("client_secret")
	form.Set("client_id", t.signer.clientID)
	form.Set("client_assertion_type", assertionType)
	form.Set("client_assertion", a)
	enc := form.Encode()
	r2 := r.Clone(r.Context())
	r2.Header.Del("Authorization") // the placeholder secret, in Basic form
	r2.Body, r2.ContentLength = io.NopCloser(strings.NewReader(enc)), int64(len(enc))
	r2.Header.Set("Content-Length", strconv.Itoa(len(enc)))
	return t.base.RoundTrip(r2)
}

// readMetadata passes a metadata request on and remembers the issuer of
// the token endpoint it names, if it is authorization server metadata.
func (t *assertionTransport) readMetadata(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var meta struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if json.Unmarshal(body, &meta) == nil && meta.Issuer != "" && meta.TokenEndpoint != "" {
		t.mu.Lock()
		t.issuers[meta.TokenEndpoint] = meta.Issuer
		t.mu.Unlock()
	}
	return resp, nil
}
