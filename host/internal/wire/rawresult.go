package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tools/call result reaches the client in one of two forms: typed (a
// *mcp.CallToolResult, encoded by the go-sdk or the shortcut) or raw (a
// *RawToolResult: the upstream's own bytes, passed on). This file is the
// only one that tells them apart (for host/gateway's call path).

// RawToolResult is a tools/call result that encodes as the bytes an
// upstream sent. For protocol 2026-07-28 and later the go-sdk puts its
// server info in a result's _meta (GetMeta/SetMeta): it is merged into the
// upstream's _meta as into a typed result's, a key the upstream set
// staying.
type RawToolResult struct {
	mcp.ResultBase
	Raw json.RawMessage
}

func (r *RawToolResult) MarshalJSON() ([]byte, error) {
	if len(r.Meta) == 0 {
		return r.Raw, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Raw, &m); err != nil {
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

// Typed decodes the result for callers that want Go values.
func (r *RawToolResult) Typed() (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(r.Raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// RawResults reports whether ss takes tools/call results as the
// upstream's bytes (RawToolResult): the protocols up to 2025-11-25, which
// the go-sdk sends exactly as a handler returns them (plainVersions), and
// 2026-07-28 and later, whose one annotation of a tools/call result (its
// server info in _meta) RawToolResult merges in.
func RawResults(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	v := ProtocolOf(ss)
	return PlainVersions[v] || v >= NewProtocolVersion
}

// TypedResult is res, a tools/call result of either form, as Go values.
func TypedResult(res mcp.Result) (*mcp.CallToolResult, error) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r, nil
	case *RawToolResult:
		return r.Typed()
	}
	return nil, fmt.Errorf("unexpected result type %T", res)
}

// ResultBytes is res as it goes out, and whether those bytes are the
// upstream's (shared: a caller that keeps them past the call copies them).
func ResultBytes(res mcp.Result) (b []byte, shared bool) {
	if r, ok := res.(*RawToolResult); ok {
		return r.Raw, true
	}
	b, _ = json.Marshal(res)
	return b, false
}

// AsSent is the upstream's bytes of res when they are the whole result
// as the client gets it (no _meta of the go-sdk's to merge in).
func AsSent(res mcp.Result) (json.RawMessage, bool) {
	r, ok := res.(*RawToolResult)
	if !ok || len(r.Meta) > 0 {
		return nil, false
	}
	return r.Raw, true
}

// ResultIsError reports a result's isError. For a result passed on as the
// upstream's bytes it looks for the field as encoders write it, without
// decoding the result.
func ResultIsError(res mcp.Result) bool {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r.IsError
	case *RawToolResult:
		return bytes.Contains(r.Raw, []byte(`"isError":true`)) || bytes.Contains(r.Raw, []byte(`"isError": true`))
	}
	return false
}
