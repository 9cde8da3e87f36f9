// Package security holds mcphost's attack suite: each test runs one attack
// from the hardening review against the built mcphost binary, with real
// upstream processes, real .wasm guests and real loopback HTTP, and checks
// that the attack fails and that mcphost keeps serving. docs/SECURITY.md
// states the guarantees these tests hold the code to.
package security
