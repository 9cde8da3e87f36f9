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
func init() {
	policies.Log = pdk.Log
	name, ok := pdk.Config(policies.SelectKey)
	if !ok {
		pdk.Register(failing(errors.New(`builtin: no "` + policies.SelectKey + `" configuration key: load this module as source = "builtin:NAME"`)))
		return
	}
	p, err := policies.New(name)
	if err != nil {
		pdk.Register(failing(err))
		return
	}
	pdk.Register(p)
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
