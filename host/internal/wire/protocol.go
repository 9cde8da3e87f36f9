package wire

import (
	"net/http"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewProtocolVersion is the first protocol version whose requests carry
// their version in _meta, and whose list results carry cache hints.
const NewProtocolVersion = "2026-07-28"

// UsesNewProtocol reports whether req follows protocol 2026-07-28 or later,
// as the go-sdk decides it (validateRequestMeta): by the protocol version
// in the request's _meta.
func UsesNewProtocol(req mcp.Request) bool {
	p := req.GetParams()
	if IsNilParams(p) {
		return false
	}
	v, ok := p.GetMeta()[mcp.MetaKeyProtocolVersion].(string)
	return ok && v >= NewProtocolVersion
}

// IsNilParams reports whether p is nil or a typed nil (a list request
// without params).
func IsNilParams(p mcp.Params) bool {
	return p == nil || reflect.ValueOf(p).IsNil()
}

// PlainVersions are the protocol versions whose results the go-sdk sends
// exactly as a handler returned them, and whose requests carry nothing per
// request that the go-sdk adds: both shortcuts (this one and raw tool
// calls, rawcall.go) serve only these.
var PlainVersions = map[string]bool{"2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// ProtocolOf returns the protocol version of a downstream session (for
// protocol 2026-07-28, of its one request), "" when not yet known.
func ProtocolOf(ss *mcp.ServerSession) string {
	if ip := ss.InitializeParams(); ip != nil {
		return ip.ProtocolVersion
	}
	return ""
}

// Sessionless reports whether r goes to the stateless handler: a request of
// protocol 2026-07-28 or later that names no session. Versions are compared
// as strings, as the go-sdk compares them; the go-sdk refuses a version it
// does not know.
func Sessionless(r *http.Request) bool {
	return r.Header.Get("Mcp-Session-Id") == "" && r.Header.Get("Mcp-Protocol-Version") >= NewProtocolVersion
}
