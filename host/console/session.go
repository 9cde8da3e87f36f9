package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// A console session is a random id in a cookie, and in this process the
// credential the operator pasted. The credential is checked again on every
// request, as a bearer token would be: a key removed from listen.auth, a
// token that expired or an identity that left the admin groups ends the
// session at once, and logging out ends it for good. A self-contained
// signed cookie could do neither; see docs/console.md.

// CookieName is the session cookie's name.
const CookieName = "mcphost_console"

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

// create starts a session for credential and returns its id.
func (s *sessions) create(credential string) string {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(raw[:])
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
	s.m[sha256.Sum256([]byte(id))] = &session{credential: credential, created: now, seen: now}
	return id
}

// credential returns the credential of a live session and marks it used.
func (s *sessions) credential(id string) (string, bool) {
	k := sha256.Sum256([]byte(id))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if !ok {
		return "", false
	}
	if expired(v, now) {
		delete(s.m, k)
		return "", false
	}
	v.seen = now
	return v.credential, true
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

// sessionCookie is the cookie for id, or the one that clears it (id "").
// SameSite=Strict keeps it off every request another site starts; Secure
// is set when the browser reached us over TLS, directly or through a proxy
// that says so (a wrong claim only keeps the cookie from coming back).
func sessionCookie(r *http.Request, id string) *http.Cookie {
	c := &http.Cookie{
		Name:     CookieName,
		Value:    id,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
		MaxAge:   int(MaxLifetime / time.Second),
	}
	if id == "" {
		c.MaxAge = -1
	}
	return c
}
