// Package tasks is mcphost's side of MCP tasks (protocol 2025-11-25's
// tasks capability): a tools/call that asks for a task (params.task) is
// answered at once with a task the client then polls (tasks/get), waits on
// (tasks/result), lists (tasks/list) and cancels (tasks/cancel).
//
// A task is either the upstream's own, when the server that owns the tool
// offers tasks, or one mcphost runs itself (Runner) for a server that does
// not: the call runs in the gateway, detached from the request that
// started it, through the same policies as any call, and its result waits
// here until it is fetched or its time to live ends.
//
// Either way the client sees a task id mcphost made (IDs): it names the
// upstream (or mcphost) and the task's own id there, and carries a MAC over
// those and the caller's identity, so an id is worth nothing to another
// caller and routes back without a table.
//
// The package knows JSON-RPC and the task messages; it knows no session,
// policy or upstream connection: host/gateway wires it in.
package tasks
