// Package policies holds the logic of mcphost's built-in policies, the
// plugins an operator names with source = "builtin:NAME". It is plain Go
// over package abi and the plain half of abi/pdk: it builds and is tested
// natively, and package filters/guest compiles it, all policies together,
// into the one Wasm module that package filters embeds.
//
// New returns a policy by name; Names lists them. Each policy reads its
// configuration in Configure, once per instance, so a bad configuration is
// refused when the host loads the plugin. docs/policies.md is the operator's
// reference for every name and configuration key.
package policies

import (
	"fmt"
	"sort"

	"github.com/mcphost-project/mcphost/abi/pdk"
)

// SelectKey is the configuration key that selects the policy inside the
// built-in module; filters.Builtin sets it.
const SelectKey = "mcphost.builtin"

// SlotKey, when the host sets it, makes an instance hold several
// configured policies: the host runs a group of built-in plugins on one
// pool of instances and gives each plugin of the group its own value (its
// name) with its own configuration, SelectKey included; the guest keeps a
// policy per value and runs the one of the call's. The value PoolSlot is
// the pool's own, which warms an instance up and runs no policy. This is
// between mcphost and its built-in module only (docs/ARCHITECTURE.md).
const SlotKey = "mcphost.builtin.slot"

// PoolSlot is SlotKey's value for the pool's own calls.
const PoolSlot = "-"

// Version is the version every built-in policy reports in describe.
const Version = "1.0.0"

var registry = map[string]func() pdk.Policy{
	"allow":        func() pdk.Policy { return newFilter("allow", true) },
	"deny":         func() pdk.Policy { return newFilter("deny", false) },
	"mentions":     newMentions,
	"titles":       newTitles,
	"describe":     newDescribe,
	"modes":        newModes,
	"json_results": newJSONResults,
	"truncate":     newTruncate,
	"redact":       newRedact,
	"pin":          newPin,
	"arguments":    newArguments,
	"compact":      newCompact,
}

// Names returns the names of the built-in policies, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New returns a new instance of the built-in policy called name.
func New(name string) (pdk.Policy, error) {
	f, ok := registry[name]
	if !ok {
		return pdk.Policy{}, fmt.Errorf("no built-in policy %q (have %v)", name, Names())
	}
	// Every built-in reads its keys in Configure: describe names them, and
	// the host refuses a key none reads (a misspelt one).
	p := f()
	p.StrictConfig = true
	return p, nil
}

// Log receives the policies' log messages. The Wasm guest sets it to
// pdk.Log, so they reach the host log under the plugin's name; natively it
// discards them unless a test sets it.
var Log = func(level pdk.Level, msg string) {}

func logf(level pdk.Level, format string, args ...any) {
	Log(level, fmt.Sprintf(format, args...))
}
