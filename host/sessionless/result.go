package sessionless

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// EncodeResult encodes res as the go-sdk encodes a result of protocol
// 2026-07-28: with resultType "complete" (its setCompleteResultType)
// unless the result has a resultType of its own, and with the server info
// impl in _meta, unless the result set that key itself (its
// annotateServerInfo). raw, when not nil, is res as the upstream sent it:
// without a _meta or resultType of its own (the usual case) both go in
// front of it, unparsed. res's _meta is replaced, not changed.
func EncodeResult(res mcp.Result, raw json.RawMessage, impl *mcp.Implementation) (json.RawMessage, error) {
	if raw = wire.TrimSpace(raw); len(raw) > 1 && raw[0] == '{' && !wire.MayHaveMember(raw, `"_meta"`) && !wire.MayHaveMember(raw, `"resultType"`) {
		member, err := infoMember(impl)
		if err != nil {
			return nil, err
		}
		rest := wire.TrimSpace(raw[1:])
		out := make([]byte, 0, len(`{"_meta":,`)+len(member)+len(completeMember)+len(rest))
		out = append(append(append(append(out, `{"_meta":`...), bytes.TrimSpace(member)...), completeMember...), ',')
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
	// The go-sdk's result types encode a resultType only when their
	// unexported one is set, which a decoded 2025-era result's is not.
	return wire.EncodeJSON(completeResult{res})
}

// completeMember is resultType "complete" as a member that follows another.
const completeMember = `,"resultType":"complete"`

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

// Complete returns res as the answer to req: for a tools/call,
// prompts/get or resources/read of protocol 2026-07-28 (req's _meta names
// it), a result that encodes resultType "complete" when it has no
// resultType of its own, as the go-sdk marks the results of its own
// handlers (setCompleteResultType), which a receiving middleware's answer
// never reaches; any other res as it is.
func Complete(method string, req mcp.Request, res mcp.Result) mcp.Result {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
	default:
		return res
	}
	if res == nil || req == nil || req.GetParams() == nil {
		return res
	}
	if v, _ := req.GetParams().GetMeta()[mcp.MetaKeyProtocolVersion].(string); v < Version {
		return res
	}
	return completeResult{res}
}

// completeResult is a result that encodes resultType "complete" unless it
// has one (the go-sdk reads and sets its _meta through it, as through res).
type completeResult struct{ mcp.Result }

func (r completeResult) MarshalJSON() ([]byte, error) {
	out, err := wire.EncodeJSON(r.Result)
	if err != nil || len(out) < 2 || out[0] != '{' || wire.MayHaveMember(out, `"resultType"`) {
		return out, err
	}
	rest := wire.TrimSpace(out[1:])
	b := make([]byte, 0, len(out)+len(completeMember))
	b = append(append(b, '{'), completeMember[1:]...)
	if len(rest) > 0 && rest[0] == '}' {
		return append(b, '}'), nil
	}
	return append(append(b, ','), rest...), nil
}
