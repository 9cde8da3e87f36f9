package security

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/internal/testproc"
)

// Callers' secrets through `mcphost run`: the link a caller gets for a
// secret they have not given is theirs alone. Another caller holding it,
// with their own credential, a wrong one or none, stores nothing; a
// guessed link opens nothing; a used link cannot be replayed; and the
// page cannot be framed.

// TestSecretLinkIsTheCallersAlone: bob gets alice's link (a shared
// screen, a log) and tries it every way; alice's upstream never sees his
// value, and her own post, once, is what it gets.
func TestSecretLinkIsTheCallersAlone(t *testing.T) {
	addr := testproc.FreeAddr(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
listen {
  http = %q
  auth {
    key "alice" {
      value   = %q
      subject = "alice"
    }
    key "bob" {
      value   = %q
      subject = "bob"
    }
  }
}
store {
  sqlite = %q
  key    = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
}
server "gh" {
  command = %q
  args    = ["-name", "gh", "-memory"]
  env     = { GITHUB_TOKEN = caller.secrets.GITHUB_TOKEN }
}
`, addr, aliceKey, bobKey, filepath.Join(dir, "state.db"), upstreamBin))
	// listen.http, not --http: the link names the address of the file.
	s := launch(t, exec.Command(mcphostBin, "run", cfg, "--log-level", "debug"), addr)
	as := func(key string) *mcp.ClientSession {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{key}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice := as(aliceKey)
	got, isErr := callText(t, alice, "gh__env", map[string]any{"text": "GITHUB_TOKEN"})
	link := regexp.MustCompile(`http://\S+/secret\?request=[\w-]+`).FindString(got)
	if !isErr || link == "" {
		t.Fatalf("alice without her secret: %q (error %v), want the link", got, isErr)
	}
	u, _ := url.Parse(link)
	id := u.Query().Get("request")
	post := func(form url.Values) (int, string) {
		t.Helper()
		resp, err := http.PostForm(s.URL+"/secret", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const bobsValue = "bob-planted-token-1d2c"
	for _, c := range []struct {
		what string
		form url.Values
		want int
	}{
		{"bob's own key", url.Values{"request": {id}, "credential": {bobKey}, "value.GITHUB_TOKEN": {bobsValue}}, http.StatusForbidden},
		{"no credential", url.Values{"request": {id}, "value.GITHUB_TOKEN": {bobsValue}}, http.StatusForbidden},
		{"a wrong key", url.Values{"request": {id}, "credential": {aliceKey + "x"}, "value.GITHUB_TOKEN": {bobsValue}}, http.StatusForbidden},
		{"a guessed link", url.Values{"request": {strings.Repeat("A", len(id))}, "credential": {bobKey}, "value.GITHUB_TOKEN": {bobsValue}}, http.StatusBadRequest},
		{"a line break in the value", url.Values{"request": {id}, "credential": {aliceKey}, "value.GITHUB_TOKEN": {"x\r\nInjected: 1"}}, http.StatusBadRequest},
	} {
		if code, page := post(c.form); code != c.want {
			t.Errorf("%s: %d %q, want %d", c.what, code, page, c.want)
		}
	}
	// Nothing was stored: alice is still asked, with the same link.
	if got, isErr := callText(t, alice, "gh__env", map[string]any{"text": "GITHUB_TOKEN"}); !isErr || !strings.Contains(got, link) {
		t.Fatalf("after bob's tries, alice: %q (error %v), want her link again", got, isErr)
	}

	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
		resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the page's headers: %v", resp.Header)
	}

	if code, page := post(url.Values{"request": {id}, "credential": {aliceKey}, "value.GITHUB_TOKEN": {"alice-own-token-77aa"}}); code != http.StatusOK {
		t.Fatalf("alice's own post: %d %q", code, page)
	}
	if code, _ := post(url.Values{"request": {id}, "credential": {aliceKey}, "value.GITHUB_TOKEN": {bobsValue}}); code != http.StatusBadRequest {
		t.Errorf("the used link replayed: %d, want 400", code)
	}
	if got, isErr := callText(t, alice, "gh__env", map[string]any{"text": "GITHUB_TOKEN"}); isErr || got != "alice-own-token-77aa" {
		t.Errorf("alice's process has GITHUB_TOKEN %q (error %v), want her own value", got, isErr)
	}
	// bob's calls never had alice's value.
	if got, isErr := callText(t, as(bobKey), "gh__env", map[string]any{"text": "GITHUB_TOKEN"}); !isErr || strings.Contains(got, "alice-own") {
		t.Errorf("bob: %q (error %v), want his own link", got, isErr)
	}
	if strings.Contains(s.stderr.String(), "alice-own-token-77aa") || strings.Contains(s.stderr.String(), bobsValue) {
		t.Error("a secret value is in mcphost's log")
	}
}
