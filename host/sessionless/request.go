package sessionless

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// The shortcut: a plain tools/call or tools/list of protocol 2026-07-28 is
// answered ahead of the go-sdk's stateless handler, which makes a go-sdk
// server session for every request (and the typed path behind it): that,
// not mcphost's work, was most of what such a request cost
// (docs/BENCHMARKS.md). Read decides from the headers and the body alone
// whether a request is one the shortcut may answer; anything else, and
// anything it cannot read, goes to the go-sdk unchanged, which answers it
// as it always did.

// Version is the one protocol version the shortcut answers.
const Version = wire.NewProtocolVersion

// MaxBody is the longest body the shortcut reads whole; a longer request
// goes to the go-sdk.
const MaxBody = 64 << 10

// Request is a plain request of protocol 2026-07-28 that the gateway
// answers itself.
type Request struct {
	ID     jsonrpc.ID
	Method string          // "tools/call" or "tools/list"
	Name   string          // tools/call: the tool
	Args   json.RawMessage // tools/call: an object, or nil when absent
	// Meta is the params' whole _meta, the per-request keys included, as
	// the go-sdk decodes it.
	Meta mcp.Meta
	// Client is the client's info from _meta, nil when it sent none.
	Client *mcp.Implementation
}

// Reader reads the shortcut's requests (Read). A client sends the same
// _meta with every request, so the Reader keeps what it read of the last
// few hundred distinct ones: reading them was half of what the shortcut
// cost.
type Reader struct {
	mu    sync.RWMutex
	metas map[string]*readMeta // the raw _meta -> what it says
}

// readMeta is what Read takes from a _meta it accepts; shared by the
// requests that sent it, so read-only.
type readMeta struct {
	meta   mcp.Meta
	client *mcp.Implementation
}

// maxMetas bounds the Reader's memory; past it, it starts over.
const maxMetas = 512

// Read reports whether r, whose body is body (read whole), is a request
// the shortcut answers, and reads it. It takes:
//
//   - a POST with Content-Type application/json that accepts both
//     application/json and text/event-stream, Mcp-Protocol-Version exactly
//     2026-07-28, no Mcp-Session-Id, no Last-Event-ID, Mcp-Method equal to
//     the body's method and, for tools/call, Mcp-Name equal to its tool,
//     and no Mcp-Param-* header (those the go-sdk checks against the
//     tool's schema);
//   - one tools/call (name, arguments and _meta only: a retry of a call in
//     rounds goes to the go-sdk) or tools/list without a cursor, read as
//     strictly as the 2025-11-25 shortcut reads them (wire.ParseToolCall,
//     wire.ParseToolsList);
//   - whose _meta names protocol 2026-07-28, has the client's capabilities
//     and, if any, its info in a form the go-sdk reads, and has no log
//     level (a client that asks for log messages gets them on an event
//     stream, from the go-sdk's path) and no progress token (likewise).
//
// The Request's Meta is shared with other requests: read-only.
func (rd *Reader) Read(r *http.Request, body []byte) (*Request, bool) {
	h := r.Header
	if r.Method != http.MethodPost || h.Get("Mcp-Protocol-Version") != Version || h.Get("Mcp-Session-Id") != "" || len(h.Values("Last-Event-ID")) > 0 {
		return nil, false
	}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, false
	}
	if !wire.AcceptsBoth(h.Values("Accept")) {
		return nil, false
	}
	for k := range h {
		if len(k) > len("Mcp-Param-") && strings.EqualFold(k[:len("Mcp-Param-")], "Mcp-Param-") {
			return nil, false
		}
	}
	var req Request
	var meta json.RawMessage
	switch h.Get("Mcp-Method") {
	case "tools/call":
		p, ok := wire.ParseToolCall(body)
		if !ok || p.Meta == nil || h.Get("Mcp-Name") != p.Name {
			return nil, false
		}
		id, err := jsonrpc.MakeID(p.ID)
		if err != nil {
			return nil, false
		}
		req = Request{ID: id, Method: "tools/call", Name: p.Name, Args: p.Args}
		meta = p.Meta
	case "tools/list":
		rawID, m, ok := wire.ParseToolsList(body)
		if !ok || m == nil {
			return nil, false
		}
		id, ok := parseID(rawID)
		if !ok {
			return nil, false
		}
		req = Request{ID: id, Method: "tools/list"}
		meta = m
	default:
		return nil, false
	}
	rd.mu.RLock()
	rm := rd.metas[string(meta)]
	rd.mu.RUnlock()
	if rm == nil {
		if rm = readRequestMeta(meta); rm == nil {
			return nil, false
		}
		rd.mu.Lock()
		if rd.metas == nil || len(rd.metas) >= maxMetas {
			rd.metas = make(map[string]*readMeta)
		}
		rd.metas[string(meta)] = rm
		rd.mu.Unlock()
	}
	req.Meta, req.Client = rm.meta, rm.client
	return &req, true
}

// readRequestMeta reads a request's _meta as Read takes it, or returns nil.
func readRequestMeta(raw json.RawMessage) *readMeta {
	m, ok := wire.DecodeMeta(raw)
	if !ok {
		return nil
	}
	if v, _ := m[mcp.MetaKeyProtocolVersion].(string); v != Version {
		return nil
	}
	if _, ok := m[mcp.MetaKeyLogLevel]; ok {
		return nil
	}
	if _, ok := m["progressToken"]; ok {
		return nil
	}
	var caps struct {
		mcp.ClientCapabilities
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	if !remarshal(m[mcp.MetaKeyClientCapabilities], &caps) {
		return nil
	}
	rm := &readMeta{meta: m}
	if v, ok := m[mcp.MetaKeyClientInfo]; ok {
		rm.client = new(mcp.Implementation)
		if !remarshal(v, rm.client) {
			return nil
		}
	}
	return rm
}

// parseID reads a JSON-RPC id that wire.ParseToolsList accepted (a string
// or an integer) as the go-sdk reads it.
func parseID(raw json.RawMessage) (jsonrpc.ID, bool) {
	var v any
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return jsonrpc.ID{}, false
		}
		v = s
	} else {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return jsonrpc.ID{}, false
		}
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
}

// remarshal decodes v, a value of a decoded _meta, into out as the go-sdk
// does (decodeMetaValue: encoded again, then decoded strictly by member
// name); nil and a value that does not decode are refused.
func remarshal(v any, out any) bool {
	if v == nil {
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	dec := segjson.NewDecoder(bytes.NewReader(b))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(out) == nil
}
