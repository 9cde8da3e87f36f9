package listener

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcphost-project/mcphost/internal/loopback"
)

// CheckHost gives another HTTP handler (the admin API's) the MCP
// listener's DNS-rebinding check: a request that reached a loopback
// address must name a loopback host. (Its browsers' requests are the
// console's, which checks their origin itself: a form sent under
// Referrer-Policy no-referrer carries Origin "null".)
func CheckHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if foreignHost(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// foreignHost answers 403 to a request that reached a loopback address
// under a name that is not loopback (DNS rebinding), and says whether it
// did.
func foreignHost(w http.ResponseWriter, r *http.Request) bool {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil && isLoopback(a.String()) && !isLoopback(r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q (this endpoint listens on loopback and answers only loopback host names)", r.Host), http.StatusForbidden)
		return true
	}
	return false
}

// CheckOrigin applies the go-sdk's DNS-rebinding check to every path, not
// only /mcp and /sse: a request that reached a loopback address must name
// a loopback host. It also refuses browsers' cross-site requests: an
// Origin must be the request's own host, a loopback one when the request
// reached a loopback address (a local tool such as an inspector), or one
// of allowed (listen.allowed_origins; Validate has checked them). Clients
// that are not browsers send no Origin and are not affected.
func CheckOrigin(allowed []string, next http.Handler) http.Handler {
	extra := make(map[string]bool, len(allowed))
	for _, o := range allowed {
		if norm, err := ParseOrigin(o); err == nil {
			extra[norm] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local := false
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
			local = isLoopback(a.String())
		}
		if local && !isLoopback(r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q (this endpoint listens on loopback and answers only loopback host names)", r.Host), http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, r.Host, local, extra) {
			http.Error(w, fmt.Sprintf("Forbidden: cross-origin request from %q (allow it with listen { allowed_origins = [%q] })", o, o), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed reports whether a browser's Origin may call: the same
// host as the request's, a loopback one on a loopback listener, or one
// configured.
func originAllowed(origin, host string, local bool, extra map[string]bool) bool {
	norm, err := ParseOrigin(origin)
	if err != nil {
		return false // includes "null"
	}
	if extra[norm] {
		return true
	}
	u, _ := url.Parse(norm)
	if strings.EqualFold(u.Host, host) {
		return true
	}
	return local && isLoopback(u.Host)
}

// ParseOrigin checks a web origin as browsers send it in the Origin
// header, scheme://host[:port] with scheme http or https and nothing
// after, and returns it normalised (lower case, default port dropped) for
// comparison.
func ParseOrigin(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("invalid origin %q (want scheme://host[:port], like \"https://app.example.com\")", origin)
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if port := u.Port(); (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return scheme + "://" + host, nil
}

// isLoopback reads an address as the go-sdk's DNS-rebinding check does.
func isLoopback(hostport string) bool { return loopback.Is(hostport) }
