package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// A tools/call result reaches the client in one of two forms: typed (a
// *mcp.CallToolResult, encoded by the go-sdk or the shortcut) or raw (a
// *rawToolResult: the upstream's own bytes, passed on). This file is the
// only one that tells them apart.

// rawToolResult is a tools/call result that encodes as the bytes an
// upstream sent. For protocol 2026-07-28 and later the go-sdk puts its
// server info in a result's _meta (GetMeta/SetMeta): it is merged into the
// upstream's _meta as into a typed result's, a key the upstream set
// staying.
type rawToolResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawToolResult) MarshalJSON() ([]byte, error) {
	if len(r.Meta) == 0 {
		return r.raw, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.raw, &m); err != nil {
		return nil, err
	}
	meta := map[string]any{}
	if own := m["_meta"]; len(own) > 0 && string(own) != "null" {
		if err := json.Unmarshal(own, &meta); err != nil {
			return nil, err
		}
	}
	for k, v := range r.Meta {
		if _, ok := meta[k]; !ok {
			meta[k] = v
		}
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	m["_meta"] = b
	return json.Marshal(m)
}

// typed decodes the result for callers that want Go values.
func (r *rawToolResult) typed() (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(r.raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// rawResults reports whether ss takes tools/call results as the
// upstream's bytes (rawToolResult): the protocols up to 2025-11-25, which
// the go-sdk sends exactly as a handler returns them (plainVersions), and
// 2026-07-28 and later, whose one annotation of a tools/call result (its
// server info in _meta) rawToolResult merges in.
func rawResults(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	v := wire.ProtocolOf(ss)
	return wire.PlainVersions[v] || v >= wire.NewProtocolVersion
}

// typedResult is res, a tools/call result of either form, as Go values.
func typedResult(res mcp.Result) (*mcp.CallToolResult, error) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r, nil
	case *rawToolResult:
		return r.typed()
	}
	return nil, fmt.Errorf("unexpected result type %T", res)
}

// resultBytes is res as it goes out, and whether those bytes are the
// upstream's (shared: a caller that keeps them past the call copies them).
func resultBytes(res mcp.Result) (b []byte, shared bool) {
	if r, ok := res.(*rawToolResult); ok {
		return r.raw, true
	}
	b, _ = json.Marshal(res)
	return b, false
}

// asSent is the upstream's bytes of res when they are the whole result
// as the client gets it (no _meta of the go-sdk's to merge in).
func asSent(res mcp.Result) (json.RawMessage, bool) {
	r, ok := res.(*rawToolResult)
	if !ok || len(r.Meta) > 0 {
		return nil, false
	}
	return r.raw, true
}

// resultIsError reports a result's isError. For a result passed on as the
// upstream's bytes it looks for the field as encoders write it, without
// decoding the result.
func resultIsError(res mcp.Result) bool {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r.IsError
	case *rawToolResult:
		return bytes.Contains(r.raw, []byte(`"isError":true`)) || bytes.Contains(r.raw, []byte(`"isError": true`))
	}
	return false
}
