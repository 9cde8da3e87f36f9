// Package listener holds what guards mcphost's HTTP listeners before a
// request reaches MCP: read and write deadlines, the cap on connections
// (LimitConnections) and the busy answers past it, the DNS-rebinding and
// Origin checks (CheckHost, ParseOrigin), the caller key that per-caller
// limits count by, and TLS certificates read again when their files
// change. It knows HTTP, not MCP sessions.
package listener
