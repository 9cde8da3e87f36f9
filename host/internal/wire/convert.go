package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/mcphost-project/mcphost/abi"
)

// Conversions between the go-sdk's MCP types and the abi types policies
// see: tools both ways, and tool results both ways (a result read straight
// from an upstream's bytes, too).

// ABIResult converts an MCP result to the form policies see.
func ABIResult(res *mcp.CallToolResult) (*abi.CallToolResult, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var out abi.CallToolResult
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RawABIResult reads a result an upstream sent (checked by
// upstream.CheckToolResult) straight into the policies' form. Member names match
// exactly, as clients read them: a policy must not judge a "Content" that
// no client shows while the "content" it shows goes out unexamined.
func RawABIResult(raw json.RawMessage) (*abi.CallToolResult, error) {
	var out abi.CallToolResult
	if _, err := segjson.Parse(raw, &out, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return nil, err
	}
	if out.Content == nil {
		out.Content = []abi.Content{}
	}
	return &out, nil
}

// FromABIResult converts a policy's result back to MCP.
func FromABIResult(res *abi.CallToolResult) (*mcp.CallToolResult, error) {
	if res == nil {
		return ToolError("policy returned no result"), nil
	}
	if res.Content == nil {
		res.Content = []abi.Content{}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return ToolError("policy result could not be encoded: %v", err), nil
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(b, &out); err != nil {
		return ToolError("policy result is not a valid MCP result: %v", err), nil
	}
	return &out, nil
}

// MCPTool is the inverse of the catalog's toABITool, for answering tools/list.
func MCPTool(t *abi.Tool) *mcp.Tool {
	out := &mcp.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
	}
	if len(t.InputSchema) > 0 {
		out.InputSchema = t.InputSchema
	} else {
		out.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if len(t.OutputSchema) > 0 {
		out.OutputSchema = t.OutputSchema
	}
	if a := t.Annotations; a != nil {
		out.Annotations = &mcp.ToolAnnotations{
			Title:           a.Title,
			DestructiveHint: a.DestructiveHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
		if a.ReadOnlyHint != nil {
			out.Annotations.ReadOnlyHint = *a.ReadOnlyHint
		}
		if a.IdempotentHint != nil {
			out.Annotations.IdempotentHint = *a.IdempotentHint
		}
	}
	if len(t.Meta) > 0 {
		var m map[string]any
		if json.Unmarshal(t.Meta, &m) == nil {
			out.Meta = m
		}
	}
	return out
}

// EncodeJSON encodes v as the go-sdk does, without HTML escaping, so that
// text appears as written (keyword hints search it) and cached bytes match
// what the go-sdk would send.
func EncodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ToolError is a tool's failure as its client is told it: an isError
// result with the text, as MCP asks for tool-level failures.
func ToolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// Executions are the execution objects (MCP 2025-11-25's Tool.execution)
// of listed tools, by the tool they belong to: the go-sdk's mcp.Tool has
// no such member. catalog.PriorListTools writes them.
type Executions map[*mcp.Tool]json.RawMessage

// Add records execution (if any) as tool's and returns tool.
func (e *Executions) Add(tool *mcp.Tool, execution json.RawMessage) *mcp.Tool {
	if len(execution) > 0 {
		if *e == nil {
			*e = Executions{}
		}
		(*e)[tool] = execution
	}
	return tool
}

// ListedTool is a tool as tools/list writes it: the go-sdk's members,
// then execution.
type ListedTool struct {
	*mcp.Tool
	Execution json.RawMessage `json:"execution,omitempty"`
}
