package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

// keyTransport sends a bearer key with every request.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpClient connects to the rig's MCP endpoint with key.
func (r *rig) mcpClient(key string) (*mcp.ClientSession, error) {
	r.t.Helper()
	srv := httptest.NewServer(r.e.Host().Handler())
	r.t.Cleanup(srv.Close)
	return mcp.NewClient(&mcp.Implementation{Name: "users-test"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: keyTransport{key}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

func callEcho(cs *mcp.ClientSession) error {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "cfg__echo", Arguments: map[string]any{"text": "hi"}})
	if err == nil && res.IsError {
		return errString("tool error")
	}
	return err
}

type errString string

// closedWithin reports whether cs's session ends within d (the server
// closed it).
func closedWithin(cs *mcp.ClientSession, d time.Duration) bool {
	done := make(chan struct{})
	go func() { cs.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func (e errString) Error() string { return string(e) }

func TestUserLifecycle(t *testing.T) {
	r := newRig(t, rigOptions{})
	created := r.do("POST", "/v1/users", `{"subject":"alice","groups":["eng"],"attributes":{"team":"core"},"keyName":"laptop"}`)
	want(t, created, http.StatusCreated)
	user, key := created.body["user"].(map[string]any), created.body["key"].(map[string]any)
	secret, _ := key["key"].(string)
	if user["source"] != "store" || !strings.HasPrefix(secret, "mcph_") || key["name"] != "laptop" || created.header.Get("Location") != "/v1/users/alice" {
		t.Fatalf("created: %s", created.raw)
	}
	keyID := key["id"].(string)

	// The key is shown once: no later answer has it.
	for _, path := range []string{"/v1/users", "/v1/users/alice"} {
		if a := r.do("GET", path, nil); a.status != http.StatusOK || strings.Contains(string(a.raw), secret) {
			t.Fatalf("GET %s: %d, key shown again: %v", path, a.status, strings.Contains(string(a.raw), secret))
		}
	}
	list := r.do("GET", "/v1/users", nil)
	users := list.body["users"].([]any)
	if len(users) != 3 || users[0].(map[string]any)["source"] != "config" || users[2].(map[string]any)["subject"] != "alice" {
		t.Fatalf("list: %s", list.raw)
	}

	// The key works at once, as alice.
	cs, err := r.mcpClient(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := callEcho(cs); err != nil {
		t.Fatalf("calling with the new key: %v", err)
	}
	// Alice is no administrator, whatever her groups.
	patched := r.do("PATCH", "/v1/users/alice", `{"groups":["eng","admins"]}`, "Content-Type", "application/merge-patch+json")
	want(t, patched, http.StatusOK)
	if got := r.do("GET", "/v1/users", nil, "Authorization", "Bearer "+secret); got.status != http.StatusForbidden {
		t.Fatalf("a stored user in the admin group reached the admin API: %d", got.status)
	}
	// The change of groups closed the session opened before it.
	if !closedWithin(cs, 5*time.Second) {
		t.Fatal("the session opened before a change of groups is still open")
	}

	// Rotation: the new key works, the old one is refused.
	rot := r.do("POST", "/v1/users/alice/keys", `{"name":"laptop-2","replaces":"`+keyID+`"}`)
	want(t, rot, http.StatusCreated)
	secret2 := rot.body["key"].(map[string]any)["key"].(string)
	if _, err := r.mcpClient(secret); err == nil {
		t.Fatal("the replaced key still connects")
	}
	cs2, err := r.mcpClient(secret2)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	if err := callEcho(cs2); err != nil {
		t.Fatalf("calling with the rotated key: %v", err)
	}

	// Disable: the open session is closed, the key refused.
	want(t, r.do("PATCH", "/v1/users/alice", `{"disabled":true}`), http.StatusOK)
	if !closedWithin(cs2, 5*time.Second) {
		t.Fatal("a disabled user's session is still open")
	}
	if _, err := r.mcpClient(secret2); err == nil {
		t.Fatal("a disabled user's key connects")
	}
	want(t, r.do("PATCH", "/v1/users/alice", `{"disabled":false}`), http.StatusOK)
	cs3, err := r.mcpClient(secret2)
	if err != nil {
		t.Fatal(err)
	}
	defer cs3.Close()
	id2 := rot.body["key"].(map[string]any)["id"].(string)
	want(t, r.do("DELETE", "/v1/users/alice/keys/"+id2, nil), http.StatusNoContent)
	testproc.WaitFor(t, "the revoked key's session to close", 5*time.Second, func() bool { return callEcho(cs3) != nil })
	want(t, r.do("DELETE", "/v1/users/alice/keys/"+id2, nil), http.StatusNotFound)

	want(t, r.do("DELETE", "/v1/users/alice", nil), http.StatusNoContent)
	want(t, r.do("GET", "/v1/users/alice", nil), http.StatusNotFound)
	want(t, r.do("DELETE", "/v1/users/alice", nil), http.StatusNotFound)
}

// TestConfigUsersAreReadOnly: the config file's keys are listed, and every
// change to their subjects is 409 naming the file.
func TestConfigUsersAreReadOnly(t *testing.T) {
	r := newRig(t, rigOptions{})
	got := r.do("GET", "/v1/users/carol", nil)
	want(t, got, http.StatusOK)
	if got.body["source"] != "config" || strings.Contains(string(got.raw), "sha256") {
		t.Fatalf("config user: %s", got.raw)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/users", `{"subject":"carol"}`},
		{"PATCH", "/v1/users/carol", `{"disabled":true}`},
		{"DELETE", "/v1/users/carol", ""},
		{"POST", "/v1/users/operator/keys", ""},
		{"DELETE", "/v1/users/operator/keys/x", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		a := r.do(c.method, c.path, body)
		if a.status != http.StatusConflict || !strings.Contains(a.problem(), "defined in the config file") || !strings.Contains(a.problem(), "mcphost.hcl") {
			t.Errorf("%s %s: %d %s", c.method, c.path, a.status, a.problem())
		}
	}
	// Still working.
	cs, err := r.mcpClient(userKey)
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
}

func TestUserBadInput(t *testing.T) {
	r := newRig(t, rigOptions{})
	rev0, _ := r.e.Store().UsersRevision(context.Background())
	for _, c := range []struct {
		body   string
		status int
		field  string
	}{
		{`{"subject":"a","grups":[]}`, http.StatusBadRequest, ""},
		{`{"subject":1}`, http.StatusBadRequest, ""},
		{`null`, http.StatusBadRequest, ""},
		{`{"subject":"a"} {}`, http.StatusBadRequest, ""},
		{`{"subject":""}`, http.StatusUnprocessableEntity, "subject"},
		{`{"subject":"a/b"}`, http.StatusUnprocessableEntity, "subject"},
		{`{"subject":".."}`, http.StatusUnprocessableEntity, "subject"},
		{`{"subject":" a"}`, http.StatusUnprocessableEntity, "subject"},
		{`{"subject":"a","groups":["x","x"]}`, http.StatusUnprocessableEntity, "groups[1]"},
		{`{"subject":"a","groups":[""]}`, http.StatusUnprocessableEntity, "groups[0]"},
		{`{"subject":"a","attributes":{"k":"v\u0000"}}`, http.StatusUnprocessableEntity, "attributes.k"},
	} {
		a := r.do("POST", "/v1/users", c.body)
		if a.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.body, a.status, a.problem(), c.status)
			continue
		}
		if c.field != "" && !strings.Contains(string(a.raw), `"field":"`+c.field+`"`) {
			t.Errorf("%s: %s does not name %s", c.body, a.raw, c.field)
		}
	}
	want(t, r.do("POST", "/v1/users", `{"subject":"bob"}`), http.StatusCreated)
	want(t, r.do("POST", "/v1/users", `{"subject":"bob"}`), http.StatusConflict)
	want(t, r.do("PATCH", "/v1/users/bob", `{"groups":null}`), http.StatusBadRequest)
	want(t, r.do("PATCH", "/v1/users/nobody", `{"disabled":true}`), http.StatusNotFound)
	want(t, r.do("POST", "/v1/users/bob/keys", `{"replaces":"nope"}`), http.StatusNotFound)
	if rev, _ := r.e.Store().UsersRevision(context.Background()); rev != rev0+1 {
		t.Fatalf("users revision %d -> %d: refused requests changed the store", rev0, rev)
	}
}

// TestStoredUserShadowedByTheFile: a reload whose file now defines a
// stored user's subject refuses that user's keys and closes its sessions;
// the stored user is listed with the problem and can still be deleted.
func TestStoredUserShadowedByTheFile(t *testing.T) {
	r := newRig(t, rigOptions{})
	created := r.do("POST", "/v1/users", `{"subject":"dave"}`)
	want(t, created, http.StatusCreated)
	secret := created.body["key"].(map[string]any)["key"].(string)
	cs, err := r.mcpClient(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	text := strings.Replace(r.text, `key "user" {`, `key "dave" {
      value   = "k-dave-file-0123456789abcdef"
      subject = "dave"
    }
    key "user" {`, 1)
	file, diags := config.Parse([]byte(text), filepath.Join(r.dir, "mcphost.hcl"))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if err := r.e.Reload(context.Background(), file); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(cs, 5*time.Second) {
		t.Fatal("the shadowed user's session is still open")
	}
	if _, err := r.mcpClient(secret); err == nil {
		t.Fatal("a stored key whose subject the file took connects")
	}
	list := r.do("GET", "/v1/users", nil)
	if !strings.Contains(string(list.raw), `listen.auth key \"dave\" now defines this subject`) {
		t.Fatalf("list: %s", list.raw)
	}
	want(t, r.do("PATCH", "/v1/users/dave", `{"disabled":true}`), http.StatusConflict)
	want(t, r.do("DELETE", "/v1/users/dave", nil), http.StatusNoContent)
	want(t, r.do("DELETE", "/v1/users/dave", nil), http.StatusConflict)
	if got := r.do("GET", "/v1/users/dave", nil); got.body["source"] != "config" {
		t.Fatalf("after deleting the stored one: %s", got.raw)
	}
}
