// Package codemode runs scripts that a model writes against the caller's
// tools: code mode (tools { exposure = "code" }). One tool, run_code,
// takes a short JavaScript program; the program calls the caller's tools
// as functions (tools.NAME(args)) and returns only what it computes, so a
// task of several steps costs the model one round trip and one small
// result instead of one of each per step.
//
// A script runs in QuickJS compiled to WebAssembly (guest/quickjs.wasm,
// built by guest/build.sh) under wazero, one fresh instance per run, with
// a time limit (the context's deadline closes the instance), a memory
// limit (the instance's linear memory, and QuickJS's own allocator below
// it) and no I/O: the module imports four WASI functions that this
// package implements itself (a clock, and stdio writes that go nowhere)
// and the host's call_tool. Each tool call goes to the function the
// caller of Run passes (the gateway's own tools/call path for that
// caller), so policies, quotas, audit and traces apply as if the client
// had called the tool itself.
//
// The package knows MCP's types and JSON Schema, not sessions, policies
// or upstreams: host/gateway owns the hook.
package codemode
