package sessionless

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// EncodeResult encodes res as the go-sdk encodes a result of protocol
// 2026-07-28: with the server info impl in _meta, unless the result set
// that key itself (its annotateServerInfo). raw, when not nil, is res as
// the upstream sent it: without a _meta of its own (the usual case) the
// server info goes in front of it, unparsed. res's _meta is replaced, not
// changed.
func EncodeResult(res mcp.Result, raw json.RawMessage, impl *mcp.Implementation) (json.RawMessage, error) {
	if raw = wire.TrimSpace(raw); len(raw) > 1 && raw[0] == '{' && !wire.MayHaveMember(raw, `"_meta"`) {
		member, err := infoMember(impl)
		if err != nil {
			return nil, err
		}
		rest := wire.TrimSpace(raw[1:])
		out := make([]byte, 0, len(`{"_meta":,`)+len(member)+len(rest))
		out = append(append(append(out, `{"_meta":`...), bytes.TrimSpace(member)...), ',')
		if len(rest) > 0 && rest[0] == '}' {
			out[len(out)-1] = '}' // an empty object
			return out, nil
		}
		return append(out, rest...), nil
	}
	m := res.GetMeta()
	if _, ok := m[mcp.MetaKeyServerInfo]; !ok {
		m2 := make(mcp.Meta, len(m)+1)
		for k, v := range m {
			m2[k] = v
		}
		m2[mcp.MetaKeyServerInfo] = impl
		res.SetMeta(m2)
	}
	return wire.EncodeJSON(res)
}

// infoMembers are the encoded server infos, by the *mcp.Implementation
// (one per gateway).
var infoMembers sync.Map

func infoMember(impl *mcp.Implementation) ([]byte, error) {
	if b, ok := infoMembers.Load(impl); ok {
		return b.([]byte), nil
	}
	b, err := wire.EncodeJSON(map[string]any{mcp.MetaKeyServerInfo: impl})
	if err == nil {
		infoMembers.Store(impl, b)
	}
	return b, err
}

// EncodeListing encodes a tools/list result as the go-sdk encodes it for
// protocol 2026-07-28: cache hints (no time to live; private when the
// listing depends on the caller), resultType, the server info impl in
// _meta. res is not changed.
func EncodeListing(res *mcp.ListToolsResult, private bool, impl *mcp.Implementation) ([]byte, error) {
	cp := *res
	scope := "public"
	if private {
		scope = "private"
	}
	cp.Cacheable = mcp.Cacheable{TTLMs: 0, CacheScope: scope}
	cp.ResultType = "complete" // as the go-sdk's setCompleteResultType
	cp.Meta = mcp.Meta{mcp.MetaKeyServerInfo: impl}
	return wire.EncodeJSON(&cp)
}
