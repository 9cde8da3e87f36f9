package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/host/auth"
	"github.com/mcphost-project/mcphost/host/config"
	"github.com/mcphost-project/mcphost/host/listener"
	"github.com/mcphost-project/mcphost/host/store"
	"github.com/mcphost-project/mcphost/internal/testproc"
)

func TestStoreSummaryHidesPasswords(t *testing.T) {
	t.Parallel()
	for _, s := range []*config.Store{
		{Driver: store.Postgres, DSN: "host=db user=m password=hunter2 dbname=x"},
		{Driver: store.Postgres, DSN: "postgres://m:hunter2@db/x?password=hunter2"},
	} {
		if got := storeSummary(s); strings.Contains(got, "hunter2") || !strings.Contains(got, "PostgreSQL") {
			t.Errorf("storeSummary(%q) = %q", s.DSN, got)
		}
	}
}

// TestShutdownAnswersAdminRequests: an admin request in flight when
// mcphost is told to stop (a connection test to a server that never
// answers) ends with the shutdown and gets its answer before the engine
// closes and the process exits.
func TestShutdownAnswersAdminRequests(t *testing.T) {
	adminAddr := testproc.FreeAddr(t)
	cfg := writeConfig(t, strings.ReplaceAll(adminConfig, "ADMIN", adminAddr))
	stop := startAdmin(t, cfg, adminAddr)
	type answer struct {
		status int
		body   string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+adminAddr+"/v1/servers:test",
			strings.NewReader(`{"command":"sleep","args":["30"],"connect_timeout":"30s"}`))
		req.Header.Set("Authorization", "Bearer "+serversAdminKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- answer{resp.StatusCode, string(b), err}
	}()
	time.Sleep(500 * time.Millisecond) // the probe is waiting on sleep
	start := time.Now()
	stop()
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("mcphost took %s to stop with an admin request in flight", took)
	}
	select {
	case a := <-got:
		if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `"ok": false`) {
			t.Fatalf("the request in flight: %d %v\n%s", a.status, a.err, a.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request in flight got no answer")
	}
}

// The start-up log's auth summary counts keys (auth_token is one) in the
// right number.
func TestAuthSummary(t *testing.T) {
	key := auth.Key{Name: "k"}
	for _, tc := range []struct {
		l    listener.Config
		want string
	}{
		{listener.Config{}, "none"},
		{listener.Config{AuthToken: "t"}, "1 key"},
		{listener.Config{Auth: &auth.Config{Keys: []auth.Key{key}}}, "1 key"},
		{listener.Config{AuthToken: "t", Auth: &auth.Config{Keys: []auth.Key{key}}}, "2 keys"},
		{listener.Config{Auth: &auth.Config{Keys: []auth.Key{key}, OAuth: &auth.OAuth{Issuer: "https://idp.example"}}}, "1 key, oauth https://idp.example"},
	} {
		if got := authSummary(tc.l); got != tc.want {
			t.Errorf("authSummary(%+v) = %q, want %q", tc.l, got, tc.want)
		}
	}
}
