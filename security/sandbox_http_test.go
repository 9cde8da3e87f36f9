package security

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSandboxHTTPRedirectToInternal: a plugin granted one loopback server
// (named in allowed_hosts) fetches a path the server answers with 302 to
// another loopback server the grant does not name, standing in for an
// internal service. The plugin must not get its data and the internal
// server must never be asked; a plain fetch from the granted server, and
// go-pdk's HTTP helpers, still work.
func TestSandboxHTTPRedirectToInternal(t *testing.T) {
	var internalHits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		io.WriteString(w, "internal-secret")
	}))
	defer internal.Close()
	_, internalPort, _ := net.SplitHostPort(internal.Listener.Addr().String())
	granted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "granted-data")
		case "/by-name":
			http.Redirect(w, r, "http://localhost:"+internalPort+"/", http.StatusFound)
		case "/by-port":
			http.Redirect(w, r, "http://127.0.0.1:"+internalPort+"/", http.StatusTemporaryRedirect)
		case "/metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}
	}))
	defer granted.Close()
	_, grantedPort, _ := net.SplitHostPort(granted.Listener.Addr().String())

	cfg := writeConfig(t, "", `
server "up" {
  command = "UPSTREAM"
}

plugin "httpfetch" {
  source        = "`+guest(t, "httpfetch")+`"
  timeout       = "20s"
  allowed_hosts = ["127.0.0.1:`+grantedPort+`", "*.example.com"]
  config        = { url = "`+granted.URL+`" }
}
`)
	s := startServer(t, cfg)
	cs := connect(t, s.URL, nil)
	if text, isErr := callText(t, cs, "up__echo", map[string]any{"text": "x", "path": "/ok"}); isErr || text != "200 granted-data" {
		t.Fatalf("fetch from the granted server: %q (isError %v)", text, isErr)
	}
	for _, path := range []string{"/by-name", "/by-port", "/metadata"} {
		text, isErr := callText(t, cs, "up__echo", map[string]any{"text": "x", "path": path})
		t.Logf("%s: %q", path, text)
		if !isErr || strings.Contains(text, "internal-secret") {
			t.Errorf("%s: the redirect was followed: %q (isError %v)", path, text, isErr)
		}
	}
	if n := internalHits.Load(); n != 0 {
		t.Errorf("the internal server was asked %d times", n)
	}
	// mcphost still serves.
	if text, isErr := callText(t, cs, "up__echo", map[string]any{"text": "x", "path": "/ok"}); isErr || text != "200 granted-data" {
		t.Fatalf("after the attack: %q (isError %v)", text, isErr)
	}
}
