package security

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

const usersAdminKey = "users-admin-key-0123456789abcdef"

// startUsersHost runs mcphost with an admin listener and an SQLite store;
// it returns the MCP and admin base URLs.
func startUsersHost(t *testing.T) (mcpURL, adminURL string) {
	t.Helper()
	adminAddr := testproc.FreeAddr(t)
	cfg := writeConfig(t, "", `
listen {
  auth {
    key "op" {
      value   = "`+usersAdminKey+`"
      subject = "operator"
      groups  = ["admins"]
    }
  }
}
admin {
  http = "`+adminAddr+`"
}
store {
  sqlite = "users.db"
}
server "up" {
  command = "UPSTREAM"
}
`)
	s := startServer(t, cfg)
	adminURL = "http://" + adminAddr
	testproc.WaitFor(t, "the admin listener", 30*time.Second, func() bool {
		resp, err := http.Get(adminURL + "/openapi.json")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s.URL, adminURL
}

// send makes one request with key and returns the status and body.
func send(t *testing.T, method, url, key, body string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), resp.Header
}

// newUserKey adds subject (or a key to it) through the admin API and
// returns the key and its id.
func newUserKey(t *testing.T, adminURL, path, body string) (key, id string) {
	t.Helper()
	code, raw, _ := send(t, "POST", adminURL+path, usersAdminKey, body)
	if code != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", path, code, raw)
	}
	var m struct {
		Key struct{ ID, Key string }
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m.Key.Key == "" {
		t.Fatalf("POST %s: %v %s", path, err, raw)
	}
	return m.Key.Key, m.Key.ID
}

// TestStoredUserIsNoAdmin: an admin key adds a user in the admin group
// ("admins", the default of admin_groups). Its key calls tools, but the
// admin API, /status and the console's login refuse it: the API cannot
// mint administrators.
func TestStoredUserIsNoAdmin(t *testing.T) {
	mcpURL, adminURL := startUsersHost(t)
	key, _ := newUserKey(t, adminURL, "/v1/users", `{"subject":"mallory","groups":["admins"]}`)
	for _, c := range []struct{ method, url, body string }{
		{"GET", adminURL + "/v1/users", ""},
		{"POST", adminURL + "/v1/users", `{"subject":"mallory2","groups":["admins"]}`},
		{"DELETE", adminURL + "/v1/users/mallory", ""},
		{"GET", adminURL + "/v1/servers", ""},
		{"GET", mcpURL + "/status", ""},
	} {
		if code, raw, _ := send(t, c.method, c.url, key, c.body); code != http.StatusForbidden {
			t.Errorf("%s %s with a stored admins-group key: %d %s", c.method, c.url, code, raw)
		}
	}
	// The console's login takes the key in a form, as a browser posts it;
	// the operator's key, sent the same way, logs in.
	consoleLogin := func(k string) bool {
		req, _ := http.NewRequest("POST", adminURL+"/console/login", strings.NewReader("key="+k))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", adminURL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			if c.Value != "" && c.MaxAge >= 0 {
				return true
			}
		}
		return false
	}
	if !consoleLogin(usersAdminKey) {
		t.Fatal("the operator's key does not log in to the console as this test sends it")
	}
	if consoleLogin(key) {
		t.Fatal("the console logged in a stored user of the admin group")
	}
	// Nothing was added by mallory.
	if code, _, _ := send(t, "GET", adminURL+"/v1/users/mallory2", usersAdminKey, ""); code != http.StatusNotFound {
		t.Fatalf("mallory2: %d, want 404", code)
	}
	// And the key itself works where it should.
	code, raw, _ := send(t, "POST", mcpURL+"/mcp", key, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"m","version":"1"}}}`,
		"Accept", "application/json, text/event-stream")
	if code != http.StatusOK {
		t.Fatalf("initialize with the stored key: %d %s", code, raw)
	}
}

// TestRevokedKeyCutsItsStream: a client holds a session's standalone GET
// stream open with a stored key, the stream by which the server reaches
// it. Revoking the key must end that stream and the session within a
// second, not only refuse the key's next request: the session's id is then
// unknown even to another key of the same user.
func TestRevokedKeyCutsItsStream(t *testing.T) {
	mcpURL, adminURL := startUsersHost(t)
	key, id := newUserKey(t, adminURL, "/v1/users", `{"subject":"erin"}`)
	other, _ := newUserKey(t, adminURL, "/v1/users/erin/keys", `{"name":"second"}`)

	accept := []string{"Accept", "application/json, text/event-stream"}
	code, raw, h := send(t, "POST", mcpURL+"/mcp", key, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e","version":"1"}}}`, accept...)
	sid := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", code, raw)
	}
	session := append(accept, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25")
	if code, raw, _ := send(t, "POST", mcpURL+"/mcp", key, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session...); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, raw)
	}
	req, _ := http.NewRequest("GET", mcpURL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the GET stream: %d", resp.StatusCode)
	}
	ended := make(chan struct{})
	go func() {
		r := bufio.NewReader(resp.Body)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				close(ended)
				return
			}
		}
	}()
	select {
	case <-ended:
		t.Fatal("the stream ended before the revocation")
	case <-time.After(200 * time.Millisecond):
	}

	if code, raw, _ := send(t, "DELETE", adminURL+"/v1/users/erin/keys/"+id, usersAdminKey, ""); code != http.StatusNoContent {
		t.Fatalf("revoking: %d %s", code, raw)
	}
	select {
	case <-ended:
	case <-time.After(time.Second):
		t.Fatal("the revoked key's GET stream is still open a second after the revocation")
	}
	if code, _, _ := send(t, "POST", mcpURL+"/mcp", key, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, session...); code != http.StatusForbidden {
		t.Fatalf("the revoked key: %d, want 403", code)
	}
	// The same user's other key: the session is gone, not merely refused.
	if code, raw, _ := send(t, "POST", mcpURL+"/mcp", other, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, session...); code != http.StatusNotFound {
		t.Fatalf("the closed session with the user's other key: %d %s, want 404", code, raw)
	}
}
