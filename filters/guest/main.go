// Command guest is the Wasm module of mcphost's built-in policies: every
// policy of package filters/policies in one module, since each compiled Go
// module costs the host about 58 MB of machine code. The configuration key
// "mcphost.builtin" (policies.SelectKey), which filters.Builtin sets,
// chooses the policy an instance runs.
//
// It is built, reproducibly, into ../builtin.wasm by `go generate
// ./filters`; see ../filters.go.
package main

// main is never called: a reactor runs its init functions, then the host
// calls the exports that package pdk declares.
func main() {}
