// Package pdk is the Go guest library for mcphost policy plugins: a policy is
// a Policy value with a plain Go function per hook, registered once from an
// init function of the plugin's main package.
//
//	package main
//
//	import (
//		"github.com/mcphost-project/mcphost/abi"
//		"github.com/mcphost-project/mcphost/abi/pdk"
//	)
//
//	func main() {}
//
//	func init() {
//		pdk.Register(pdk.Policy{
//			Name:    "no-delete",
//			Version: "1.0.0",
//			ToolCall: func(in *abi.ToolCallInput) (*abi.CallDecision, error) {
//				if in.Tool == "delete" {
//					return pdk.Deny("deleting is not allowed here"), nil
//				}
//				return pdk.Allow(), nil
//			},
//		})
//	}
//
// Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
//
// The package owns the plugin's exports (mcphost_describe and one per hook,
// declared with //go:wasmexport in this package, which Go allows outside
// package main), so a plugin never writes one. Describe lists exactly the
// hooks that have a handler.
//
// The package has two halves. Register, Config, ConfigJSON, Log and Logf
// talk to the Extism host and exist only when GOOS=wasip1. Everything else
// (Policy, the handler types, ConfigSource, Guest and the decision helpers)
// is plain Go that also builds natively, so a policy's logic can live in an
// ordinary package and be tested with go test, through Guest exactly as the
// exports run it; package abi/policytest makes that short.
package pdk
