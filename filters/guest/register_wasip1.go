//go:build wasip1

package main

import (
	"errors"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
	"github.com/mcphost-project/mcphost/filters/policies"
)

// The policy is chosen here, in init, rather than in Configure, because
// describe must name only the chosen policy's hooks (a hook named but not
// needed would cost a JSON round trip per call) and pdk takes the hooks
// from the handlers registered. mcphost runs _initialize inside the first
// export call of an instance, with the configuration in place (abi/SPEC.md
// sections 3 and 4.1), so the key can be read here.
//
// An instance of a group of built-ins (policies.SlotKey set) holds a
// policy per slot instead, each configured at its first call from the
// configuration of that call, and runs the one the call's slot names.
func init() {
	policies.Log = pdk.Log
	if _, ok := pdk.Config(policies.SlotKey); ok {
		pdk.RegisterSelect(selectSlot)
		return
	}
	pdk.Register(newPolicy())
}

// newPolicy returns the policy the configuration's policies.SelectKey
// names, or one that fails with the reason.
func newPolicy() pdk.Policy {
	name, ok := pdk.Config(policies.SelectKey)
	if !ok {
		return failing(errors.New(`builtin: no "` + policies.SelectKey + `" configuration key: load this module as source = "builtin:NAME"`))
	}
	p, err := policies.New(name)
	if err != nil {
		return failing(err)
	}
	return p
}

// slots are the policies of this instance by policies.SlotKey value.
var slots = map[string]*pdk.Guest{}

// selectSlot returns the Guest of the call's slot, making it at the
// slot's first call.
func selectSlot() (*pdk.Guest, error) {
	slot, ok := pdk.Config(policies.SlotKey)
	if !ok {
		return nil, errors.New(`builtin: no "` + policies.SlotKey + `" configuration key in a call to a group of built-ins`)
	}
	if g := slots[slot]; g != nil {
		return g, nil
	}
	p := warmUp
	if slot != policies.PoolSlot {
		p = newPolicy()
	}
	g := pdk.NewGuest(p, pdk.Config)
	slots[slot] = g
	return g, nil
}

// warmUp answers the pool's own describe, which initialises an instance
// before any plugin of the group uses it.
var warmUp = pdk.Policy{
	Name:      "builtin",
	Version:   policies.Version,
	ToolsList: func(*abi.ToolsListInput) (*abi.ToolsListOutput, error) { return nil, nil },
}

// failing is a policy that refuses to load, with err as the reason.
func failing(err error) pdk.Policy {
	return pdk.Policy{
		Name:      "builtin",
		Version:   policies.Version,
		Configure: func(pdk.ConfigSource) error { return err },
		ToolsList: func(*abi.ToolsListInput) (*abi.ToolsListOutput, error) { return nil, err },
	}
}
