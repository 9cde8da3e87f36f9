// Package upstream is mcphost's side of the servers it gathers: for each
// configured server (ServerConfig) a Server that starts its process or
// dials its URL, keeps its sessions (shared, per client or per session),
// logs in with OAuth where the server asks, lists its tools, prompts and
// resources, and forwards calls, typed or raw.
//
// A Server tells the serving core what happens through Events, the one
// seam between the two: lists changed, notifications and requests from the
// server, and the questions a per-client session asks about its caller.
// Probe and Login use a Server alone, with no core.
package upstream
