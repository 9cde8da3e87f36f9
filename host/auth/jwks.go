package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcphost-project/mcphost/internal/loopback"
	"github.com/mcphost-project/mcphost/internal/secrets"
)

// errKeysUnavailable is what a client is told when the key set could not be
// fetched; the reason, which may name internal hosts, goes to the log.
var errKeysUnavailable = errors.New("the authorization server's signing keys are unavailable; try again later")

// keyCache holds an issuer's JSON Web Key Set: fetched on first use (after
// discovering its URL from the issuer's metadata), used for jwksMaxAge,
// and fetched again early when a token names a kid it lacks (key
// rotation), at most once per jwksMinRefresh. A fetch runs without the
// lock: a token whose key is known never waits for one; a token whose key
// is not waits for the fetch in flight, if any.
type keyCache struct {
	issuer string
	client *http.Client

	mu       sync.Mutex
	url      string // the jwks_uri; "" until discovered
	set      *jose.JSONWebKeySet
	fetched  time.Time     // when set was fetched
	tried    time.Time     // when a fetch was last started
	inflight chan struct{} // closed when the fetch in flight ends; nil for none
	lastErr  error
	now      func() time.Time
	log      hclog.Logger
}

func newKeyCache(issuer, jwksURL string, client *http.Client, log hclog.Logger) *keyCache {
	return &keyCache{issuer: issuer, url: jwksURL, client: client, now: time.Now, log: log}
}

// key returns the verification key for kid and alg.
func (c *keyCache) key(ctx context.Context, kid, alg string) (*jose.JSONWebKey, error) {
	c.mu.Lock()
	now := c.now()
	if c.set != nil {
		if k := pick(c.set, kid, alg); k != nil {
			// An old set still serves the keys it has while a new one
			// is fetched: an unreachable issuer does not stall tokens.
			if now.Sub(c.fetched) > jwksMaxAge && c.inflight == nil && now.Sub(c.tried) >= jwksMinRefresh {
				c.tried = now
				c.inflight = make(chan struct{})
				go c.refresh(c.url, c.inflight)
			}
			c.mu.Unlock()
			return k, nil
		}
	}
	// Unknown kid or an old set: fetch, but not more often than
	// jwksMinRefresh, whatever the tokens say; or wait for the fetch in
	// flight.
	wait := c.inflight
	if wait == nil && (c.tried.IsZero() || now.Sub(c.tried) >= jwksMinRefresh) {
		c.tried = now
		done := make(chan struct{})
		c.inflight, wait = done, done
		go c.refresh(c.url, done)
	}
	c.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the issuer's signing keys: %w", ctx.Err())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		return nil, errKeysUnavailable
	}
	if k := pick(c.set, kid, alg); k != nil {
		return k, nil
	}
	if kid == "" {
		return nil, fmt.Errorf("access token names no key (kid) and the issuer has no single %s key", alg)
	}
	return nil, fmt.Errorf("access token is signed with key %q, which the issuer does not publish", kid)
}

// refresh fetches the key set (discovering its URL first when url is "")
// and closes done. It runs on its own, so that a request that stops
// waiting does not cancel the fetch the others wait for.
func (c *keyCache) refresh(url string, done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	set, url, err := c.fetch(ctx, url)
	if err != nil {
		c.log.Warn("fetching the OAuth issuer's signing keys failed; tokens cannot be checked until a fetch succeeds", "issuer", c.issuer, "error", secrets.MaskURLs(err.Error()))
	}
	c.mu.Lock()
	c.lastErr = err
	if err == nil {
		c.set, c.fetched, c.url = set, c.now(), url
	}
	c.inflight = nil
	c.mu.Unlock()
	close(done)
}

// pick finds the public key for kid usable with alg: a token's header may
// name a key, never make an RSA key verify an HMAC.
func pick(set *jose.JSONWebKeySet, kid, alg string) *jose.JSONWebKey {
	var found *jose.JSONWebKey
	n := 0
	for i := range set.Keys {
		k := &set.Keys[i]
		if (kid != "" && k.KeyID != kid) || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != alg {
			continue
		}
		found = k
		n++
	}
	if n != 1 {
		return nil
	}
	return found
}

// fetch reads the key set from url, discovering it first when url is "";
// it returns the URL it read.
func (c *keyCache) fetch(ctx context.Context, url string) (*jose.JSONWebKeySet, string, error) {
	if url == "" {
		u, err := discoverJWKS(ctx, c.issuer, c.client)
		if err != nil {
			return nil, "", err
		}
		url = u
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, url, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, url, fmt.Errorf("fetching %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, url, fmt.Errorf("fetching %s: %s", url, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, url, fmt.Errorf("reading the key set at %s: %w", url, err)
	}
	return &set, url, nil
}

// discoverJWKS finds the issuer's jwks_uri in its RFC 8414 metadata, or
// else in its OpenID Connect discovery document, at the locations the MCP
// authorization spec lists.
func discoverJWKS(ctx context.Context, issuer string, client *http.Client) (string, error) {
	var errs []error
	for _, u := range metadataURLs(issuer) {
		asm, err := getMetadata(ctx, u, client)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		if asm == nil {
			continue // 4xx: try the next location
		}
		if strings.TrimSuffix(asm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return "", fmt.Errorf("the metadata at %s is for issuer %q, not %q", u, asm.Issuer, issuer)
		}
		if asm.JWKSURI == "" {
			return "", fmt.Errorf("the metadata at %s has no jwks_uri; set oauth.jwks_url", u)
		}
		if err := checkHTTPSURL(asm.JWKSURI); err != nil {
			return "", fmt.Errorf("the metadata at %s: jwks_uri: %w", u, err)
		}
		return asm.JWKSURI, nil
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("discovering the issuer's keys: %w", errors.Join(errs...))
	}
	return "", fmt.Errorf("no authorization server metadata found for issuer %s; set oauth.jwks_url", issuer)
}

// getMetadata reads authorization server metadata; nil for a 4xx answer.
// Unlike a client, a resource server needs only the issuer and the key
// set's URL, so it asks nothing else of the metadata (PKCE support, say).
func getMetadata(ctx context.Context, u string, client *http.Client) (*oauthex.AuthServerMeta, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return nil, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s", resp.Status)
	}
	var asm oauthex.AuthServerMeta
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&asm); err != nil {
		return nil, fmt.Errorf("reading the metadata: %w", err)
	}
	return &asm, nil
}

// metadataURLs are the RFC 8414 and OpenID Connect metadata locations for
// issuer, path-inserted first.
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.Path, "/")
	at := func(p string) string {
		v := *u
		v.Path, v.RawPath = p, ""
		return v.String()
	}
	if path == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	}
	return []string{
		at("/.well-known/oauth-authorization-server" + path),
		at("/.well-known/openid-configuration" + path),
		at(path + "/.well-known/openid-configuration"),
	}
}

// checkHTTPSURL requires an https URL, or http to a loopback host (a
// local identity provider in development): keys read over plain HTTP
// from elsewhere could be anyone's.
func checkHTTPSURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	switch {
	case (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Errorf("%q is not an https URL", s)
	case u.Scheme == "http" && !loopback.Is(u.Hostname()):
		return fmt.Errorf("%q uses plain http to a host that is not loopback: anyone on the way could hand out signing keys; use https", s)
	}
	return nil
}
