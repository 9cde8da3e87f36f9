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
// a client may call it as a task: taskSupport "forbidden" (the default,
// when absent), "optional" or "required". A client consults it only for a
// server that offers tasks (tasks.requests.tools.call), which mcphost does
// on /mcp: so mcphost lists, for each tool, what mcphost itself accepts.

// optional is the execution of a tool whose tasks mcphost runs.
var optional = json.RawMessage(`{"taskSupport":"optional"}`)

// Execution is the execution object mcphost lists for a tool, given its
// server's own (upstream, nil when it gave none) and whether mcphost
// forwards task requests to that server (offers: upstream.OffersTasks).
//
//   - offers: the server runs the task, so its word stands, as it gave it
//     ("required" included: mcphost then refuses plain calls, Plain).
//   - otherwise mcphost runs the call as a task itself when a client asks
//     (Runner), so a client may call any tool either way: "optional". The
//     server's own word means nothing here: MCP has a client use tasks on
//     no tool of a server without the tasks capability, and a server
//     behind OAuth is not sent requests of mcphost's own.
//
// The result is shared: callers must not change it.
func Execution(offers bool, upstream json.RawMessage) json.RawMessage {
	if offers {
		return upstream
	}
	return optional
}

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
