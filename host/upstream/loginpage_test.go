package upstream

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzBoundCallback: whatever the query and the cookie, the callback of
// bound logins completes none but the one its state names, and that one
// only with the cookie value of whoever proved they may complete it.
func FuzzBoundCallback(f *testing.F) {
	const s1, s2 = "QMRDQ4LX6BJDUXS5YAZK2K3RZ3", "Z6E3H5M7BVN2C4X8A9QWERTY12"
	const secret = "the-proof-0123456789"
	for _, seed := range []struct {
		query, value string
		own          bool
	}{
		{"state=" + s1 + "&code=abc", secret, true}, {"state=" + s1 + "&code=abc", secret, false},
		{"state=" + s1 + "&code=abc", "", true}, {"state=" + s1 + "&code=abc", secret + "x", true},
		{"state=" + s2 + "&code=abc", secret, true}, {"state=" + s1 + "&error=access_denied", secret, true},
		{"state=" + s1, "\"" + secret + "\"", true},
	} {
		f.Add(seed.query, seed.value, seed.own)
	}
	f.Fuzz(func(t *testing.T, query, value string, own bool) {
		l := &Logins{Bound: true}
		pending := map[string]*PendingLogin{}
		for _, s := range []string{s1, s2} {
			p, _, err := l.Expect("srv", "key:bob", "https://as.example/authorize?client_id=c&state="+s, "http://127.0.0.1:7700"+CallbackPath)
			if err != nil {
				t.Fatal(err)
			}
			p.Finish(nil) // the callback's page does not wait for an exchange
			pending[s] = p
		}
		l.prove(pending[s1], secret)
		r := httptest.NewRequest(http.MethodGet, "/oauth/callback", nil)
		r.URL.RawQuery = query
		name := "mcphost_login_" + pending[s1].ID
		if !own {
			name = "mcphost_login_" + pending[s2].ID
		}
		r.Header.Set("Cookie", name+"="+value)
		w := httptest.NewRecorder()
		l.ServeHTTP(w, r)
		state := r.URL.Query().Get("state")
		if c, err := r.Cookie(name); err == nil {
			value = c.Value // net/http's reading: surrounding quotes dropped
		}
		for s, p := range pending {
			select {
			case <-p.Done:
				if s != state || s != s1 || !own || value != secret {
					t.Fatalf("query %q, cookie %s=%q completed the login of state %s", query, name, value, s)
				}
			default:
			}
		}
	})
}

// FuzzJWTClaims: any token is read as claims or not at all, without
// panicking; a JWT's payload object always is.
func FuzzJWTClaims(f *testing.F) {
	for _, seed := range []string{"", "a.b.c", "x." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"i","sub":"s"}`)) + ".y",
		"x." + base64.RawURLEncoding.EncodeToString([]byte(`[1]`)) + ".y", "x." + base64.RawURLEncoding.EncodeToString([]byte(`{"a":1}{}`)) + ".y", "...", "opaque-token"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		jwtClaims(payload)
		sub, _ := json.Marshal(payload)
		tok := "h." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":`+string(sub)+`}`)) + ".s"
		var want string
		if err := json.Unmarshal(sub, &want); err != nil {
			t.Fatal(err)
		}
		c := jwtClaims(tok)
		if c == nil || c["sub"] != want {
			t.Fatalf("claims of a JWT with sub %q: %v", payload, c)
		}
	})
}
