package tasks

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost-project/mcphost/host/internal/paramheader"
	"github.com/mcphost-project/mcphost/host/internal/wire"
)

// A tool's execution object (MCP 2025-11-25, Tool.execution) says whether
// a client may call it as a task; what mcphost lists is catalog.Execution.

// Required reports whether execution says "required". Member names match
// exactly, as clients read them (the last of a repeated one counts, as in
// JavaScript).
func Required(execution json.RawMessage) bool {
	var e map[string]json.RawMessage
	var support string
	return len(execution) > 0 && json.Unmarshal(execution, &e) == nil &&
		json.Unmarshal(e["taskSupport"], &support) == nil && support == "required"
}

// asTask marks the context of a call made as a task.
type asTask struct{}

// AsTask marks ctx as the admission of a call made as a task (the Service
// marks the calls it admits).
func AsTask(ctx context.Context) context.Context { return context.WithValue(ctx, asTask{}, true) }

// CodeMissingCapability is the error of a request that the server can
// serve only with a capability the client did not declare (protocol
// 2026-07-28: -32021, Missing Required Client Capability).
const CodeMissingCapability = mcp.CodeMissingRequiredClientCapabilities

// Plain is the error a call made without a task (ctx not marked by AsTask)
// is refused with, when its tool's execution (as listed, Execution) says
// "required"; nil when the call may go. To protocol 2025-11-25 it is MCP's
// "a server MUST return -32601 (Method not found) if a client does not"
// call such a tool as a task. A request of 2026-07-28 (its HTTP headers,
// paramheader.Incoming, name it) comes from a client without the tasks
// extension, which it would otherwise have gone through the Service with:
// the extension's answer is -32021, naming the extension.
func Plain(ctx context.Context, tool string, execution json.RawMessage) error {
	if ctx.Value(asTask{}) != nil || !Required(execution) {
		return nil
	}
	if h := paramheader.Incoming(ctx); h != nil && h.Get("Mcp-Protocol-Version") >= wire.NewProtocolVersion {
		return &jsonrpc.Error{Code: CodeMissingCapability, Data: missingExtensionData, Message: fmt.Sprintf(
			"Missing required client capability: tool %q runs only as a task: declare the %s extension", tool, Extension)}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf(
		"tool %q must be called as a task (its execution.taskSupport is \"required\"): send the tools/call with params.task", tool)}
}
