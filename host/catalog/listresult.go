package catalog

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// The results of the four list methods carry cache hints, ttlMs and
// cacheScope (the go-sdk's mcp.Cacheable, SEP-2549), from protocol
// 2026-07-28 on; earlier versions do not define them. The go-sdk fills
// them in its own list handlers, which mcphost's middleware answers ahead
// of, and encodes them always (the members have no omitempty). So
// mcphost settles them itself:
//
//   - to a request of 2026-07-28 or later, ttlMs 0 (the gateway's lists
//     change on reloads and upstream list_changed, which it forwards) and
//     cacheScope "public", or "private" for a tools/list that a policy
//     computed per caller;
//   - to anything earlier, neither member.

// ListAnswer returns res, a list result of the caller's own (it is
// changed), as req's protocol defines it. private says the list depends on
// the caller.
func ListAnswer(req mcp.Request, res mcp.Result, private bool) mcp.Result {
	if wire.UsesNewProtocol(req) {
		scope := "public"
		if private {
			scope = "private"
		}
		c := mcp.Cacheable{TTLMs: 0, CacheScope: scope}
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			r.Cacheable = c
		case *mcp.ListPromptsResult:
			r.Cacheable = c
		case *mcp.ListResourcesResult:
			r.Cacheable = c
		case *mcp.ListResourceTemplatesResult:
			r.Cacheable = c
		}
		return res
	}
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		return &PriorListTools{ListToolsResult: r}
	case *mcp.ListPromptsResult:
		return &priorListPrompts{ListPromptsResult: r}
	case *mcp.ListResourcesResult:
		return &priorListResources{ListResourcesResult: r}
	case *mcp.ListResourceTemplatesResult:
		return &priorListTemplates{ListResourceTemplatesResult: r}
	}
	return res
}

// ToolsAnswer is ListAnswer for a tools/list result, whose tools'
// execution objects (exec) the answer carries to protocols before
// 2026-07-28: MCP 2025-11-25 defines Tool.execution; 2026-07-28 has
// none (its tasks extension leaves the choice to the server), so its
// answer has none either.
func ToolsAnswer(req mcp.Request, res *mcp.ListToolsResult, exec wire.Executions, private bool) mcp.Result {
	a := ListAnswer(req, res, private)
	if p, ok := a.(*PriorListTools); ok {
		p.Execution = exec
	}
	return a
}

// noCacheHints shadows the members of mcp.Cacheable: encoding/json prefers
// the shallower of two members with one name, and these are always nil, so
// a result embedding the go-sdk's type next to this encodes without
// ttlMs and cacheScope, at the cost of nothing but the encoding itself.
type noCacheHints struct {
	TTLMs      *struct{} `json:"ttlMs,omitempty"`
	CacheScope *struct{} `json:"cacheScope,omitempty"`
}

// List results for protocols before 2026-07-28. Each is an mcp.Result
// through the type it embeds (whose methods it promotes).
type (
	PriorListTools struct {
		*mcp.ListToolsResult
		noCacheHints
		Execution wire.Executions `json:"-"` // of Tools (MarshalJSON)
	}
	priorListPrompts struct {
		*mcp.ListPromptsResult
		noCacheHints
	}
	priorListResources struct {
		*mcp.ListResourcesResult
		noCacheHints
	}
	priorListTemplates struct {
		*mcp.ListResourceTemplatesResult
		noCacheHints
	}
)

// MarshalJSON encodes r as its fields say, with each tool's execution
// object, if it has one, after its other members: the go-sdk's mcp.Tool
// has no such member, so the tools are written as wire.ListedTool. The
// text is not HTML-escaped (an encoder that escapes does so on top).
func (r *PriorListTools) MarshalJSON() ([]byte, error) {
	type fields PriorListTools // without this method
	if len(r.Execution) == 0 || r.ListToolsResult == nil || r.Tools == nil {
		return wire.EncodeJSON((*fields)(r))
	}
	tools := make([]wire.ListedTool, len(r.Tools))
	for i, t := range r.Tools {
		tools[i] = wire.ListedTool{Tool: t, Execution: r.Execution[t]}
	}
	return wire.EncodeJSON(struct {
		*fields
		Tools []wire.ListedTool `json:"tools"` // shadows ListToolsResult's
	}{(*fields)(r), tools})
}

var (
	_ mcp.Result = (*PriorListTools)(nil)
	_ mcp.Result = (*priorListPrompts)(nil)
	_ mcp.Result = (*priorListResources)(nil)
	_ mcp.Result = (*priorListTemplates)(nil)
)
