// Package loopback tells loopback addresses as the go-sdk's DNS-rebinding
// check does: exactly "localhost" (not "LOCALHOST", not a subdomain), or a
// loopback IP as netip reads it (an IPv4-mapped loopback included).
package loopback

import (
	"net"
	"net/netip"
	"strings"
)

// Is reports whether addr, a "host:port" or a bare host (IPv6 possibly in
// brackets), names this machine.
func Is(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
