// Package version holds mcphost's version: what upstreams and downstream
// clients are told in MCP's implementation info, and traces in their
// resource. One variable, in a leaf, so the upstream side and the serving
// core read the same value without importing each other; release builds
// set it with
//
//	-ldflags "-X github.com/mcphost-project/mcphost/internal/version.Version=1.2.0"
package version

// Version is mcphost's version. cmd/mcphost stamps it from the build
// before anything reads it.
var Version = "0.1.0"
