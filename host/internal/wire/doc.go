// Package wire holds what every part of mcphost's host side needs of MCP's
// wire format, and nothing else: a scanner that reads JSON messages without
// decoding them, the protocol-version rules, JSON-RPC error bodies, the
// text a client is told of an error, and MCP's log-level order. It is the
// leaf of the host side: it imports no other mcphost package but
// internal/secrets.
package wire
