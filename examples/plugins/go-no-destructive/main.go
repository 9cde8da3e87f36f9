// Command go-no-destructive is an mcphost policy plugin, written with
// abi/pdk: it hides tools that are destructive, by their annotations or by
// name, and refuses calls to them with a reason.
//
// Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o no-destructive.wasm .
//
// The policy itself is in policy.go, plain Go that is tested natively with
// abi/policytest; register_wasip1.go registers it when built for Wasm.
package main

// main is never called: a reactor runs its init functions, then the host
// calls the exports that package pdk declares. It is here so the package
// also builds, and is tested, natively.
func main() {}
