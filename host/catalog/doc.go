// Package catalog names what the upstreams offer into one table: each
// server's tools get exposed names (ToolsConfig: prefix, separator, length
// and a hash where names clash or run long), prompts likewise, and
// resources and templates are routed to the server that serves them
// (ResourcesConfig). It is rebuilt whole on every change and read without
// locks; problems (clashes, invalid names) are reported, not fatal. It
// knows MCP's types, not sessions or connections.
package catalog
