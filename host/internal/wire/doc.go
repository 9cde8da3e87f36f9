// Package wire holds what every part of mcphost's host side needs of MCP's
// wire format, and nothing else: a scanner that reads JSON messages without
// decoding them, the strict readers of plain tools/call and tools/list
// requests, stdio framing, the protocol-version rules, JSON-RPC error
// bodies, the text a client is told of an error or a denial (and a tool
// error result), the conversions between MCP's types and the abi types
// policies see, and MCP's log-level order. It is the leaf of the host
// side: of mcphost it imports only abi and internal/secrets.
package wire
