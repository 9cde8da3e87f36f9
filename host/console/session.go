package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// A console session is a random id in a cookie, a second random value (the
// token) that only the console's own page holds, and in this process the
// credential the operator pasted. The cookie alone authorizes nothing:
// cookies are not kept apart by port, so every other web app on the host
// gets it, and a cookie is what a browser sends on its own. Every request
// must also carry the token in a header, which another origin can neither
// read nor make a browser send. The credential is checked again on every
// request, as a bearer token would be: a key removed from listen.auth, a
// token that expired or an identity that left the admin groups ends the
// session at once, and logging out ends it for good. A self-contained
// signed cookie could do neither; see docs/console.md.

// CookieName is the session cookie's name over plain HTTP; over TLS it is
// SecureCookieName, which browsers keep to this host, this scheme and "/".
const (
	CookieName       = "mcphost_console"
	SecureCookieName = "__Host-mcphost_console"
)

// TokenHeader carries the session's token on every request of the page.
const TokenHeader = "X-Mcphost-Console-Token"

// Session lifetimes: an hour without a request ends a session, and none
// outlives a working day.
const (
	IdleTimeout = time.Hour
	MaxLifetime = 8 * time.Hour
)

// maxSessions bounds the table; only admins create sessions, so reaching
// it means a script logging in in a loop. The oldest session goes.
const maxSessions = 256

type session struct {
	credential string
	token      string
	created    time.Time
	seen       time.Time
}

// sessions is the table of live sessions, keyed by the SHA-256 of their
// id: the map's lookups then reveal nothing of the ids through timing.
type sessions struct {
	mu  sync.Mutex
	m   map[[32]byte]*session
	now func() time.Time
}

func newSessions() *sessions {
	return &sessions{m: map[[32]byte]*session{}, now: time.Now}
}

// random is 256 bits, URL-safe.
func random() string {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

// create starts a session for credential and returns its id.
func (s *sessions) create(credential string) string {
	id := random()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	if len(s.m) >= maxSessions {
		var oldest [32]byte
		var at time.Time
		for k, v := range s.m {
			if at.IsZero() || v.created.Before(at) {
				oldest, at = k, v.created
			}
		}
		delete(s.m, oldest)
	}
	s.m[sha256.Sum256([]byte(id))] = &session{credential: credential, token: random(), created: now, seen: now}
	return id
}

// credential returns the credential and token of a live session and marks
// it used.
func (s *sessions) credential(id string) (credential, token string, ok bool) {
	k := sha256.Sum256([]byte(id))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if !ok {
		return "", "", false
	}
	if expired(v, now) {
		delete(s.m, k)
		return "", "", false
	}
	v.seen = now
	return v.credential, v.token, true
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

func (s *sessions) pruneLocked(now time.Time) {
	for k, v := range s.m {
		if expired(v, now) {
			delete(s.m, k)
		}
	}
}

func expired(v *session, now time.Time) bool {
	return now.Sub(v.seen) > IdleTimeout || now.Sub(v.created) > MaxLifetime
}

// secure reports whether the browser reached us over TLS, directly or
// through a proxy that says so (a wrong claim only keeps the cookie from
// coming back).
func secure(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// cookieName is the session cookie's name for r's scheme.
func cookieName(r *http.Request) string {
	if secure(r) {
		return SecureCookieName
	}
	return CookieName
}

// sessionCookie is the cookie for id, or the one that clears it (id "").
// SameSite=Strict keeps it off every request another site starts, though
// not off other ports of this host, which are the same site: hence the
// token. Over TLS it is Secure and __Host- prefixed (no Domain, Path "/").
func sessionCookie(r *http.Request, id string) *http.Cookie {
	c := &http.Cookie{
		Name:     cookieName(r),
		Value:    id,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   secure(r),
		MaxAge:   int(MaxLifetime / time.Second),
	}
	if id == "" {
		c.MaxAge = -1
	}
	return c
}
