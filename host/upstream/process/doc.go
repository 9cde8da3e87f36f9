// Package process ends what an upstream server started: each stdio server
// runs in its own process group, tagged in its environment, and on Linux in
// a cgroup of its own where one can be made; closing it signals the group,
// every descendant that left it and the cgroup. BecomeSubreaper makes
// mcphost adopt orphans so that none outlives it. It knows processes, not
// MCP.
package process
