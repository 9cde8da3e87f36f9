// Package filters holds the policies shipped with mcphost, compiled into
// one Wasm module and embedded, so that source = "builtin:NAME" works with
// no toolchain. The policies are ordinary plugins against package abi,
// written with abi/pdk: their logic is in filters/policies, the module's
// main package in filters/guest. A built-in is loaded, pooled, limited and
// hot-swapped like any other plugin, and an operator replaces one by
// pointing source at a .wasm file instead.
//
// builtin.wasm is committed, so a fresh clone runs without building it.
// After changing the policies, rebuild it with
//
//	go generate ./filters
//
// TestBuiltinReproducible fails until the committed module matches its
// sources; builtin.wasm.go-version records the toolchain that built it.
package filters

import (
	_ "embed"
	"unsafe"

	"github.com/mcphost-project/mcphost/filters/policies"
)

//go:generate go run ./internal/genwasm

// moduleText is embedded as a string, not a []byte, so that it is
// read-only data of the executable: its pages are the file's, which the
// plugin runtime lets go once it has compiled the module (plugins.evict),
// and a write to them faults instead of changing the module under its
// digest.
//
//go:embed builtin.wasm
var moduleText string

// module is moduleText's bytes, not a copy. Nothing may write to it.
var module = unsafe.Slice(unsafe.StringData(moduleText), len(moduleText))

// Builtin resolves a built-in policy by name, as plugins.RuntimeOptions
// wants: the shared module and the configuration that selects the policy
// in it. Every built-in returns the same module bytes, so the runtime
// compiles it once.
func Builtin(name string) (wasm []byte, config map[string]string, ok bool) {
	if _, err := policies.New(name); err != nil {
		return nil, nil, false
	}
	return module, map[string]string{policies.SelectKey: name}, true
}

// Names returns the names of the built-in policies, sorted.
func Names() []string { return policies.Names() }

// Module returns the embedded module, which holds every built-in policy.
// It is read-only memory: a write to it faults.
func Module() []byte { return module }
