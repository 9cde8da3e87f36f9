//go:build !mcphost_extism

// The hardening these tests check is the native engine's; the go-sdk engine
// (mcphost_extism, kept for comparison benchmarks) has the go-sdk's own
// http_request and WASI.

package plugins

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphost-project/mcphost/abi"
)

// TestHTTPRedirectsChecked: a granted loopback server answers 302 to
// another loopback server the grant does not name; the plugin must not
// get its data, and the second server must never be asked.
func TestHTTPRedirectsChecked(t *testing.T) {
	t.Parallel()
	var internalHits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		io.WriteString(w, "internal-secret")
	}))
	defer internal.Close()
	_, internalPort, _ := net.SplitHostPort(internal.Listener.Addr().String())
	var target atomic.Value
	granted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.Load().(string), http.StatusFound)
	}))
	defer granted.Close()
	_, grantedPort, _ := net.SplitHostPort(granted.Listener.Addr().String())

	rt := newRuntime(t, RuntimeOptions{})
	for _, tc := range []struct {
		name   string
		hosts  []string
		target string
		want   string
	}{
		{"to a name the grant lacks", []string{"127.0.0.1"}, "http://localhost:" + internalPort + "/", "is not allowed"},
		{"to another port", []string{"127.0.0.1:" + grantedPort}, "http://127.0.0.1:" + internalPort + "/", "is not allowed"},
		{"past a wildcard", []string{"127.0.0.1:" + grantedPort, "*"}, "http://127.0.0.1:" + internalPort + "/", "loopback address"},
		{"a name that resolves to loopback", []string{"127.0.0.1:" + grantedPort, "*"}, "http://localhost:" + internalPort + "/", "loopback address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target.Store(tc.target)
			p := load(t, rt, Spec{Name: "gopdk", Source: guest(t, "gopdk"), Timeout: 10 * time.Second, Instances: 1,
				Config: map[string]string{"url": granted.URL}, AllowedHosts: tc.hosts})
			out, err := p.Call(context.Background(), abi.HookToolCall, callInput(t, `{}`))
			if err == nil {
				t.Fatalf("the request was let through: %s", out)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "internal-secret") {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
			if n := internalHits.Load(); n != 0 {
				t.Fatalf("the internal server was asked %d times", n)
			}
		})
	}
}

// TestHTTPLoopbackNeedsNaming: a wildcard grant does not reach loopback;
// naming the address (or "localhost") does.
func TestHTTPLoopbackNeedsNaming(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	rt := newRuntime(t, RuntimeOptions{})
	for _, tc := range []struct {
		hosts []string
		url   string
		ok    bool
	}{
		{[]string{"*"}, srv.URL, false},
		{[]string{"*"}, "http://localhost:" + port, false},
		{[]string{"127.0.0.1"}, srv.URL, true},
		{[]string{"127.0.0.1:" + port}, srv.URL, true},
		{[]string{"localhost:" + port}, "http://localhost:" + port, true},
	} {
		p := load(t, rt, Spec{Name: "gopdk", Source: guest(t, "gopdk"), Timeout: 10 * time.Second, Instances: 1,
			Config: map[string]string{"url": tc.url}, AllowedHosts: tc.hosts})
		_, err := p.Call(context.Background(), abi.HookToolCall, callInput(t, `{}`))
		if (err == nil) != tc.ok {
			t.Errorf("%v to %s: %v, want allowed %v", tc.hosts, tc.url, err, tc.ok)
		}
	}
}
