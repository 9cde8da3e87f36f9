package admin_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserSecrets: a caller's secrets through /v1/users/{subject}/secrets.
// A PUT stores a value and answers without it; GET lists names; what
// could not be a secret is refused with the field at fault; a store
// without a key keeps none. Every answer matches the OpenAPI document.
func TestUserSecrets(t *testing.T) {
	r := newRig(t, rigOptions{})
	const value = "ghp_carol-token-0123456789"
	put := r.do("PUT", "/v1/users/carol/secrets/GITHUB_TOKEN", `{"value":"`+value+`"}`)
	want(t, put, http.StatusOK)
	if put.body["name"] != "GITHUB_TOKEN" || put.body["updated"] == nil || strings.Contains(string(put.raw), value) {
		t.Fatalf("PUT: %s", put.raw)
	}
	list := r.do("GET", "/v1/users/carol/secrets", nil)
	want(t, list, http.StatusOK)
	if got := list.body["secrets"].([]any); len(got) != 1 || got[0].(map[string]any)["name"] != "GITHUB_TOKEN" || strings.Contains(string(list.raw), value) {
		t.Fatalf("GET: %s", list.raw)
	}
	// Any caller's subject, stored or not: an OAuth token's too.
	want(t, r.do("GET", "/v1/users/someone-of-the-idp/secrets", nil), http.StatusOK)

	for _, c := range []struct {
		path, body string
		status     int
		field      string
	}{
		{"/v1/users/carol/secrets/bad-name", `{"value":"v"}`, http.StatusUnprocessableEntity, "name"},
		{"/v1/users/carol/secrets/T", `{"value":""}`, http.StatusUnprocessableEntity, "value"},
		{"/v1/users/carol/secrets/T", `{"value":"a\nb"}`, http.StatusUnprocessableEntity, "value"},
		{"/v1/users/carol/secrets/T", `{"value":"` + strings.Repeat("x", 8193) + `"}`, http.StatusUnprocessableEntity, "value"},
		{"/v1/users/carol%20/secrets/T", `{"value":"v"}`, http.StatusUnprocessableEntity, "subject"},
		{"/v1/users/carol/secrets/T", `{"value":1}`, http.StatusBadRequest, ""},
		{"/v1/users/carol/secrets/T", `{"value":"v","extra":true}`, http.StatusBadRequest, ""},
	} {
		a := r.do("PUT", c.path, c.body)
		if a.status != c.status || (c.field != "" && !strings.Contains(string(a.raw), `"field":"`+c.field+`"`)) {
			t.Errorf("PUT %s %.40s: %d %s; want %d naming %q", c.path, c.body, a.status, a.raw, c.status, c.field)
		}
	}
	if got := r.do("GET", "/v1/users/carol/secrets", nil).body["secrets"].([]any); len(got) != 1 {
		t.Errorf("refused PUTs stored something: %v", got)
	}
	want(t, r.do("DELETE", "/v1/users/carol/secrets/GITHUB_TOKEN", nil), http.StatusNoContent)
	want(t, r.do("DELETE", "/v1/users/carol/secrets/GITHUB_TOKEN", nil), http.StatusNotFound)
	if got := r.do("GET", "/v1/users/carol/secrets", nil).body["secrets"].([]any); len(got) != 0 {
		t.Errorf("after DELETE: %v", got)
	}
	// Only administrators.
	if a := r.do("GET", "/v1/users/carol/secrets", nil, "Authorization", "Bearer "+userKey); a.status != http.StatusForbidden {
		t.Errorf("carol listing her own secrets through the admin API: %d", a.status)
	}

	dir := t.TempDir()
	noKey := newRig(t, rigOptions{store: fmt.Sprintf("sqlite = %q", filepath.Join(dir, "nokey.db"))})
	if a := noKey.do("PUT", "/v1/users/carol/secrets/T", `{"value":"v"}`); a.status != http.StatusConflict || !strings.Contains(string(a.raw), "no key") {
		t.Errorf("a store without a key: %d %s", a.status, a.raw)
	}
}
