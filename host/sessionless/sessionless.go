// Package sessionless holds the parts of mcphost's protocol 2026-07-28 path
// that need no gateway: which handler a request to /mcp goes to, the
// strict reading of the plain tools/call and tools/list requests the
// gateway answers ahead of the go-sdk, the way such an answer is written,
// and the sealed requestState of a call in rounds (state.go).
//
// Protocol 2026-07-28 (SEP-2575) has no sessions: a client learns the
// server with server/discover, and every request carries its protocol
// version, client info and capabilities in _meta, with the version also in
// the Mcp-Protocol-Version header. The go-sdk serves it only from a
// stateless streamable HTTP handler, and its stateful handler, which
// 2025-11-25 and earlier need (server-to-client requests, the standalone
// GET stream, resumption), refuses it. So /mcp has both over the one
// mcp.Server, and each request goes to one of them by its headers alone
// (ByProtocol):
//
//   - Mcp-Session-Id absent and Mcp-Protocol-Version 2026-07-28 or later:
//     the stateless handler (a session of the go-sdk's own for the one
//     request, closed when it ends);
//   - anything else: the stateful handler, as before (initialize, and the
//     requests of the sessions it opens).
//
// The go-sdk client asking for 2026-07-28 sends server/discover with the
// header and no session id: the stateless handler answers it with every
// version it serves, 2026-07-28 first, and the client stays on 2026-07-28.
// A client asking for an earlier version sends initialize without the
// header, and the stateful handler answers as it always did.
package sessionless

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/paramheader"
	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// ByProtocol sends each request to /mcp to the stateless or the stateful
// handler (see the package comment).
func ByProtocol(stateful, stateless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wire.Sessionless(r) {
			if r.Header.Get("Mcp-Method") == "tools/call" {
				w = paramheader.StatusWriter(w) // a HeaderMismatch is HTTP 400
			}
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// NoMidCallRequests is the answer to an upstream's sampling, elicitation or
// roots request for a client of protocol version (2026-07-28 or later),
// which cannot be sent requests, outside the calls that ask in rounds: a
// per-client upstream session asking its client between calls, say. The
// upstream reports it.
func NoMidCallRequests(server, method, version string) *jsonrpc.Error {
	return &jsonrpc.Error{
		Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("mcphost: server %q sent %s for a client of protocol %s, which has no server-to-client requests, "+
			"outside a tools/call, prompts/get or resources/read (which mcphost turns into that protocol's input_required rounds): connect with protocol 2025-11-25 to use it",
			server, method, version),
	}
}

// PerRequestMeta reports whether k is a _meta key that protocol 2026-07-28
// puts in every request in place of a session's initialize: the protocol
// version, the client's info and capabilities, and the log level it wants.
func PerRequestMeta(k string) bool {
	switch k {
	case mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeyLogLevel:
		return true
	}
	return false
}

// CallerMeta keeps the parts of a request's _meta that describe the caller;
// the progress token changes per request and would defeat view caching.
// What protocol 2026-07-28 puts in every request's _meta instead of a
// session's initialize (version, client info and capabilities, log level)
// is left out too: the Caller has the client's name and version from it
// (the gateway's sessionCaller), so a policy sees one client alike at every version.
func CallerMeta(m map[string]any) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	drop := func(k string) bool { return k == "progressToken" || PerRequestMeta(k) }
	dropped := 0
	for k := range m {
		if drop(k) {
			dropped++
		}
	}
	if dropped == len(m) {
		return nil // a 2026-07-28 request's usual _meta: nothing about the caller
	}
	for k := range m {
		if !drop(k) {
			continue
		}
		m2 := make(map[string]any, len(m))
		for k, v := range m {
			if !drop(k) {
				m2[k] = v
			}
		}
		m = m2
		break
	}
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}
