package extismhost

import (
	"cmp"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestParseHostGrant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		entry, err string
		host, port string
		ip, glob   bool
	}{
		{entry: "api.example.com", host: "api.example.com"},
		{entry: "API.Example.com:8443", host: "api.example.com", port: "8443"},
		{entry: "*.example.com", host: "*.example.com", glob: true},
		{entry: "*", host: "*", glob: true},
		{entry: "127.0.0.1", host: "127.0.0.1", ip: true},
		{entry: "127.0.0.1:9000", host: "127.0.0.1", port: "9000", ip: true},
		{entry: "::1", host: "::1", ip: true},
		{entry: "[::1]", host: "::1", ip: true},
		{entry: "[::1]:80", host: "::1", port: "80", ip: true},
		{entry: "localhost:3000", host: "localhost", port: "3000"},
		{entry: "", err: "empty"},
		{entry: "host:0", err: "port"},
		{entry: "host:65536", err: "port"},
		{entry: "host:08", err: "port"},
		{entry: "host:http", err: "port"},
		{entry: ":80", err: "empty host"},
		{entry: "[nothost]:80", err: "IPv6"},
		{entry: "http://example.com", err: "not a host"},
		{entry: "user@example.com", err: "not a host"},
		{entry: "example.com/path", err: "not a host"},
		{entry: "[a-", err: "IPv6"},
		{entry: "a[-", err: "bad pattern"},
		{entry: "fe80::1%eth0", err: "zone"},
	} {
		g, err := parseHostGrant(tc.entry)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one with %q", tc.entry, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.entry, err)
			continue
		}
		if g.host != tc.host || g.port != tc.port || g.addr.IsValid() != tc.ip || (g.glob != nil) != tc.glob {
			t.Errorf("%q: %+v", tc.entry, g)
		}
	}
}

func TestHostGrantsAllowURL(t *testing.T) {
	t.Parallel()
	gs, err := parseHostGrants([]string{"api.example.com", "*.svc.example", "127.0.0.1:9000", "[::1]:9000", "localhost", "10.0.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://api.example.com/x", true},
		{"http://API.EXAMPLE.COM:8080/x", true},
		{"https://a.svc.example/", true},
		{"https://a.b.svc.example/", true},
		{"https://svc.example/", false},
		{"https://example.com/", false},
		{"http://127.0.0.1:9000/", true},
		{"http://127.0.0.1:9001/", false},
		{"http://127.0.0.1/", false},
		{"http://[::1]:9000/", true},
		{"http://[0:0::1]:9000/", true},
		{"http://[::ffff:127.0.0.1]:9000/", true},
		{"http://localhost:1234/", true},
		{"http://10.0.0.5/", true},
		{"ftp://api.example.com/", false},
		{"file:///etc/passwd", false},
		{"https://user:pw@api.example.com/", false},
		{"https://api.example.com.evil.net/", false},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := gs.allowURL(u); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want allowed %v", tc.url, err, tc.ok)
		}
	}
}

func TestAddressRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr, class string
	}{
		{"93.184.216.34", ""},
		{"2606:2800:220:1:248:1893:25c8:1946", ""},
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"192.168.1.1", "private"},
		{"fd00::1", "private"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "special-purpose"},
		{"100.64.0.1", "special-purpose"},
		{"255.255.255.255", "special-purpose"},
		{"64:ff9b::7f00:1", "special-purpose"},
		{"2002:7f00:1::", "special-purpose"},
		{"192.0.2.1", "special-purpose"},
		{"198.51.100.7", "special-purpose"},
		{"203.0.113.9", "special-purpose"},
		{"192.88.99.1", "special-purpose"},
		{"198.19.255.255", "special-purpose"},
		{"::7f00:1", "special-purpose"}, // IPv4-compatible 127.0.0.1
		{"::a00:1", "special-purpose"},  // IPv4-compatible 10.0.0.1
		{"::ffff:0:7f00:1", "special-purpose"},
		{"64:ff9b:1::1", "special-purpose"},
		{"100::1", "special-purpose"},
		{"100:0:0:1::1", "special-purpose"},
		{"2001::1", "special-purpose"},
		{"2001:2::1", "special-purpose"},
		{"2001:db8::1", "special-purpose"},
		{"3fff::1", "special-purpose"},
		{"5f00::1", "special-purpose"},
		{"fec0::1", "special-purpose"},
		{"fc00::1", "private"},
		{"2001:200::1", ""}, // just past 2001::/23
		{"192.0.3.1", ""},
		{"198.20.0.1", ""},
		{"239.1.2.3", "multicast"},
		{"224.0.0.1", "link-local"},
	} {
		if got := addrClass(netip.MustParseAddr(tc.addr)); got != tc.class {
			t.Errorf("%s: %q, want %q", tc.addr, got, tc.class)
		}
	}
	gs, _ := parseHostGrants([]string{"*", "127.0.0.1:9000", "localhost:9001", "db.internal"})
	for _, tc := range []struct {
		host, port, dial string
		ok               bool
	}{
		{"example.com", "443", "93.184.216.34:443", true},
		{"example.com", "443", "127.0.0.1:443", false}, // a name that resolves to loopback
		{"rebind.example", "80", "169.254.169.254:80", false},
		{"127.0.0.1", "9000", "127.0.0.1:9000", true},   // named
		{"127.0.0.1", "9002", "127.0.0.1:9002", false},  // that address, another port
		{"localhost", "9001", "[::1]:9001", true},       // "localhost" names loopback
		{"localhost", "9001", "10.0.0.1:9001", false},   // but nothing else
		{"localhost", "9003", "127.0.0.1:9003", false},  // nor another port
		{"db.internal", "5432", "10.0.0.7:5432", false}, // a name does not name its address
		{"127.0.0.1", "9000", "[::ffff:127.0.0.1]:9000", true},
		{"example.com", "80", "[::7f00:1]:80", false}, // loopback, spelled IPv4-compatible
	} {
		named, loopback := gs.namedAddrs(tc.host, tc.port)
		if err := checkDialAddr(tc.dial, named, loopback); (err == nil) != tc.ok {
			t.Errorf("%s:%s dialling %s: %v, want allowed %v", tc.host, tc.port, tc.dial, err, tc.ok)
		}
	}
}

func FuzzHostGrant(f *testing.F) {
	for _, s := range [][2]string{
		{"api.example.com", "api.example.com:443"},
		{"*.example.com:8443", "a.example.com:8443"},
		{"[::1]:80", "::1:80"},
		{"127.0.0.1", "127.0.0.1:1"},
		{"localhost", "localhost:80"},
		{"[a-", "x:1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, entry, hostport string) {
		g, err := parseHostGrant(entry)
		host, port, _ := strings.Cut(hostport, ":")
		if err != nil {
			return
		}
		if g.port != "" && g.matches(host, port) && port != g.port {
			t.Fatalf("%q matched port %q", entry, port)
		}
		if g.glob == nil && !g.addr.IsValid() && g.matches(host, port) && host != g.host {
			t.Fatalf("exact %q matched another host %q", entry, host)
		}
		if g.glob == nil && !g.addr.IsValid() && !g.matches(g.host, cmp.Or(g.port, "80")) {
			t.Fatalf("%q does not match its own host", entry)
		}
		// What an entry names for dialling is only ever its own address.
		named, _ := hostGrants{g}.namedAddrs(host, port)
		for _, a := range named {
			if a != g.addr {
				t.Fatalf("%q named %s", entry, a)
			}
		}
		if a, err := netip.ParseAddr(host); err == nil {
			_ = addrClass(a)
		}
	})
}

// TestHTTPLimits: a request body over the limit traps before anything
// is sent.
func TestHTTPLimits(t *testing.T) {
	t.Parallel()
	h, err := NewHTTP([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	k := NewKernel(&Env{HTTP: h}, &budget{limit: 1 << 30}, nil)
	req := k.write([]byte(`{"url":"http://127.0.0.1:1/","method":"POST"}`))
	body := k.alloc(maxHTTPBytes + 1)
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(error).Error(), "over the limit") {
			t.Fatalf("recovered %v", r)
		}
	}()
	k.httpRequest(req, body)
}
