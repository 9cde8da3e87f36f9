package extismhost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobwas/glob"
)

// Limits of the Extism http_request host function.
const (
	// maxHTTPRedirects bounds the redirects one request follows; each hop
	// is checked against allowed_hosts like the first URL.
	maxHTTPRedirects = 5
	// maxHTTPTime bounds one request with its redirects, whatever the
	// hook's own timeout.
	maxHTTPTime = 30 * time.Second
	// maxHTTPHeaderBytes bounds a response's headers.
	maxHTTPHeaderBytes = 64 << 10
)

// ErrHTTPRefused marks an http_request that allowed_hosts or the address
// rules refused.
var ErrHTTPRefused = errors.New("refused by allowed_hosts")

// hostGrant is one allowed_hosts entry: a host name, an IP address or a
// glob over host names ("*.example.com"), with an optional port.
type hostGrant struct {
	host string     // lowercased; the pattern's text for a glob
	glob glob.Glob  // nil for an exact host
	addr netip.Addr // valid when host is an IP address
	port string     // "" for any port
}

// CheckAllowedHost reports why an allowed_hosts entry is not valid, or nil.
func CheckAllowedHost(entry string) error {
	_, err := parseHostGrant(entry)
	return err
}

// parseHostGrant parses "host", "host:port", "[v6]:port", "v6" or a glob
// over host names, optionally with ":port".
func parseHostGrant(entry string) (hostGrant, error) {
	var g hostGrant
	host := entry
	switch {
	case entry == "":
		return g, errors.New("empty host")
	case strings.ContainsAny(entry, "/@\\ \t\r\n#?"):
		return g, fmt.Errorf("%q is not a host name, an IP address or a pattern like \"*.example.com\" (no scheme, path or credentials)", entry)
	case strings.HasPrefix(entry, "["):
		h, p, err := net.SplitHostPort(entry)
		if err != nil {
			if !strings.HasSuffix(entry, "]") {
				return g, fmt.Errorf("%q is neither [IPv6] nor [IPv6]:port", entry)
			}
			h = entry[1 : len(entry)-1]
		}
		host, g.port = h, p
		if _, err := netip.ParseAddr(host); err != nil {
			return g, fmt.Errorf("%q: %q in brackets is not an IPv6 address", entry, host)
		}
	case strings.Count(entry, ":") == 1:
		h, p, err := net.SplitHostPort(entry)
		if err != nil {
			return g, fmt.Errorf("%q: %w", entry, err)
		}
		host, g.port = h, p
	}
	if g.port != "" {
		if n, err := strconv.Atoi(g.port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != g.port {
			return g, fmt.Errorf("%q: port %q is not a number from 1 to 65535", entry, g.port)
		}
	}
	host = strings.ToLower(host)
	if host == "" {
		return g, fmt.Errorf("%q has an empty host", entry)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return g, fmt.Errorf("%q: an address with a zone is not supported", entry)
		}
		g.host, g.addr = host, a.Unmap()
		return g, nil
	}
	if strings.ContainsAny(host, "%:") {
		return g, fmt.Errorf("%q is not a host name, an IP address or a pattern like \"*.example.com\"", entry)
	}
	g.host = host
	if strings.ContainsAny(host, "*?[{") {
		gl, err := glob.Compile(host)
		if err != nil {
			return g, fmt.Errorf("%q: bad pattern: %w", entry, err)
		}
		g.glob = gl
	}
	return g, nil
}

// parseHostGrants parses a spec's allowed_hosts.
func parseHostGrants(entries []string) (hostGrants, error) {
	gs := make(hostGrants, 0, len(entries))
	for _, e := range entries {
		g, err := parseHostGrant(e)
		if err != nil {
			return nil, fmt.Errorf("allowed_hosts: %w", err)
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// matches reports whether the grant covers host (lowercased, as in a URL,
// without brackets) on port.
func (g hostGrant) matches(host, port string) bool {
	if g.port != "" && g.port != port {
		return false
	}
	switch {
	case g.addr.IsValid():
		a, err := netip.ParseAddr(host)
		return err == nil && a.Zone() == "" && a.Unmap() == g.addr
	case g.glob != nil:
		return g.glob.Match(host)
	}
	return g.host == host
}

// urlHostPort returns a URL's lowercased host and its port (the scheme's
// default when it names none), or an error for a scheme other than http
// and https.
func urlHostPort(u *url.URL) (host, port string, err error) {
	switch u.Scheme {
	case "http":
		port = "80"
	case "https":
		port = "443"
	default:
		return "", "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.User != nil {
		return "", "", errors.New("credentials in the URL are not allowed")
	}
	host = strings.ToLower(u.Hostname())
	if host == "" {
		return "", "", errors.New("no host")
	}
	if p := u.Port(); p != "" {
		port = p
	}
	return host, port, nil
}

// hostGrants are a plugin's parsed allowed_hosts.
type hostGrants []hostGrant

// allowURL reports whether a request to u is allowed, and why not.
func (gs hostGrants) allowURL(u *url.URL) error {
	host, port, err := urlHostPort(u)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrHTTPRefused, u.Redacted(), err)
	}
	for _, g := range gs {
		if g.matches(host, port) {
			return nil
		}
	}
	return fmt.Errorf("%w: HTTP request to %q is not allowed: its host is not in the plugin's allowed_hosts", ErrHTTPRefused, u.Redacted())
}

// namedAddrs returns what the entries matching host:port explicitly name
// beyond public addresses: IP literals name themselves; "localhost"
// names loopback. A glob or another host name names nothing: a name that
// resolves to a private address is refused (DNS rebinding).
func (gs hostGrants) namedAddrs(host, port string) (addrs []netip.Addr, loopback bool) {
	for _, g := range gs {
		if g.glob != nil || !g.matches(host, port) {
			continue
		}
		switch {
		case g.addr.IsValid():
			addrs = append(addrs, g.addr)
		case g.host == "localhost":
			loopback = true
		}
	}
	return addrs, loopback
}

// Ranges a plugin may not reach unless a grant names the address, beyond
// what netip classifies (unspecified, loopback, link-local, multicast,
// private: 10/8, 172.16/12, 192.168/16, fc00::/7): the blocks of IANA's
// IPv4 and IPv6 special-purpose registries (RFC 6890) that are not
// globally reachable, taken whole where a few addresses inside are
// anycast services no plugin fetches over HTTP (192.0.0.0/24,
// 2001::/23), and the prefixes that embed an IPv4 address, which could
// spell an internal one.
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast (deprecated)
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated): ::7f00:1 is 127.0.0.1
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may reach any IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("100:0:0:1::/64"),  // dummy prefix
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments: Teredo (2001::/32), benchmarking (2001:2::/48), ORCHID...
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds an IPv4
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("5f00::/16"),       // segment routing (SRv6) SIDs
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// addrClass names why a plugin may not reach a, or "" when a is public.
func addrClass(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsPrivate():
		return "private"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(a) {
			return "special-purpose"
		}
	}
	return ""
}

// HTTP is one plugin's http_request: its allowed_hosts and the client made
// on first use. A nil *HTTP refuses every request.
type HTTP struct {
	grants hostGrants
	made   atomic.Pointer[http.Client]
}

// NewHTTP parses allowedHosts (see CheckAllowedHost).
func NewHTTP(allowedHosts []string) (*HTTP, error) {
	gs, err := parseHostGrants(allowedHosts)
	if err != nil {
		return nil, err
	}
	return &HTTP{grants: gs}, nil
}

func (h *HTTP) grantsOrNone() hostGrants {
	if h == nil {
		return nil
	}
	return h.grants
}

// client returns the plugin's client for http_request: no proxy (the
// proxy would reach what the plugin may not), every redirect checked
// against allowed_hosts, every address checked when it is dialled (after
// DNS, so a name that rebinds to an internal address is refused), and
// bounded headers. It is only called once allowURL passed, so h is not nil.
func (h *HTTP) client() *http.Client {
	if c := h.made.Load(); c != nil {
		return c
	}
	grants := h.grants
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxResponseHeaderBytes = maxHTTPHeaderBytes
	tr.MaxIdleConnsPerHost = 2
	tr.IdleConnTimeout = 30 * time.Second
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		named, loopback := grants.namedAddrs(strings.ToLower(host), port)
		d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				return checkDialAddr(address, named, loopback)
			}}
		return d.DialContext(ctx, network, addr)
	}
	c := &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxHTTPRedirects {
				return fmt.Errorf("%w: more than %d redirects", ErrHTTPRefused, maxHTTPRedirects)
			}
			if err := grants.allowURL(req.URL); err != nil {
				return fmt.Errorf("redirect from %q: %w", via[len(via)-1].URL.Redacted(), err)
			}
			return nil
		},
	}
	if !h.made.CompareAndSwap(nil, c) {
		tr.CloseIdleConnections()
	}
	return h.made.Load()
}

// checkDialAddr refuses an address that is not public unless named.
func checkDialAddr(address string, named []netip.Addr, loopback bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: dialling %q: %v", ErrHTTPRefused, address, err)
	}
	a := ap.Addr().Unmap().WithZone("")
	class := addrClass(a)
	if class == "" {
		return nil
	}
	if class == "loopback" && loopback {
		return nil
	}
	for _, n := range named {
		if n == a {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is a %s address; a plugin reaches such an address only when allowed_hosts names it (like %q)",
		ErrHTTPRefused, a, class, a.String())
}

// Close drops the plugin's idle connections.
func (h *HTTP) Close() {
	if h == nil {
		return
	}
	if c := h.made.Load(); c != nil {
		c.CloseIdleConnections()
	}
}
