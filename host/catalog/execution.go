package catalog

import "encoding/json"

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
//     ("required" included: mcphost then refuses plain calls, tasks.Plain).
//   - otherwise mcphost runs the call as a task itself when a client asks
//     (host/tasks.Runner), so a client may call any tool either way: "optional". The
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
