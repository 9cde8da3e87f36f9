package pdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcphost-project/mcphost/abi"
)

// ToolsListFunc handles the tools_list hook. It returns the tools to expose,
// in order; a nil output leaves the listing as it came in.
type ToolsListFunc func(in *abi.ToolsListInput) (*abi.ToolsListOutput, error)

// ToolCallFunc handles the tool_call hook. A nil decision allows the call.
type ToolCallFunc func(in *abi.ToolCallInput) (*abi.CallDecision, error)

// ToolResultFunc handles the tool_result hook. A nil output leaves the
// result as it came in, and is the cheapest answer: on a host of ABI 1.1
// or later it is sent as {"unchanged":true} instead of the whole result.
type ToolResultFunc func(in *abi.ToolResultInput) (*abi.ToolResultOutput, error)

// ListFunc handles the list hook (ABI 1.2) for prompts/list, resources/list
// and resources/templates/list. A nil output leaves the listing as it came.
type ListFunc func(in *abi.ListInput) (*abi.ListOutput, error)

// RequestFunc handles the request hook (ABI 1.2). A nil decision allows.
type RequestFunc func(in *abi.RequestInput) (*abi.RequestDecision, error)

// MessageFunc handles the message hook (ABI 1.2). A nil output leaves the
// message as it came, and is the cheapest answer.
type MessageFunc func(in *abi.MessageInput) (*abi.MessageOutput, error)

// Policy is one plugin: its name and version, as reported by describe, and a
// handler per hook it implements. A nil handler means the hook is not
// implemented and not named in describe.
//
// A handler's error is a plugin error: the host receives its message and
// applies the plugin's on_error policy; the instance stays usable. A panic in
// a handler is recovered and reported the same way.
type Policy struct {
	Name    string
	Version string

	// Configure, if set, runs once per instance before the instance's first
	// export call (describe included) with the plugin's configuration. An
	// error fails that call and every later one on the instance, so a bad
	// configuration is refused when the host loads the plugin.
	Configure func(config ConfigSource) error

	ToolsList  ToolsListFunc
	ToolCall   ToolCallFunc
	ToolResult ToolResultFunc

	// The hooks of ABI 1.2, on every MCP method but tools. A host of ABI
	// 1.1 or earlier ignores them (with a warning) and never calls them.
	List    ListFunc
	Request RequestFunc
	Message MessageFunc

	// StrictConfig declares that Configure reads every key the policy
	// takes: describe then names the keys it looked up (abi.Describe's
	// ConfigKeys), and a host of ABI 1.2 or later refuses a configuration
	// with any other key, naming the nearest one the policy reads. Errors
	// about a key's value should start with config "KEY": (the
	// ConfigSource methods' do), so that the host can point at it.
	StrictConfig bool

	// Hints, if set, returns the promises the policy makes about its hooks
	// (abi.Hints), which let the host skip calls or reuse answers. It is
	// called after Configure, so the promises may depend on configuration.
	Hints func() abi.Hints

	// ServesTools is set by package abi/pdk/tool for a tool plugin (ABI
	// 1.4), which needs no hook: its tools are its work.
	ServesTools bool
}

// Hooks returns the names of the hooks p implements, in ABI order.
func (p *Policy) Hooks() []string {
	hooks := []string{}
	if p.ToolsList != nil {
		hooks = append(hooks, abi.HookToolsList)
	}
	if p.ToolCall != nil {
		hooks = append(hooks, abi.HookToolCall)
	}
	if p.ToolResult != nil {
		hooks = append(hooks, abi.HookToolResult)
	}
	if p.List != nil {
		hooks = append(hooks, abi.HookList)
	}
	if p.Request != nil {
		hooks = append(hooks, abi.HookRequest)
	}
	if p.Message != nil {
		hooks = append(hooks, abi.HookMessage)
	}
	return hooks
}

// Describe returns p's describe output as far as it is known before
// Configure runs: without ConfigKeys, which a Guest's describe export
// fills from the keys Configure read.
func (p *Policy) Describe() abi.Describe {
	d := p.describe(nil)
	d.ConfigKeys = nil
	return d
}

// describe is Describe with the configuration keys Configure read, for a
// StrictConfig policy.
func (p *Policy) describe(configKeys []string) abi.Describe {
	d := abi.Describe{ABI: abi.Version, Name: p.Name, Version: p.Version, Hooks: p.Hooks()}
	if p.StrictConfig {
		keys := append([]string{}, configKeys...)
		d.ConfigKeys = &keys
	}
	if p.Hints != nil {
		if h := p.Hints(); !h.IsZero() {
			d.Hints = &h
		}
	}
	return d
}

// Validate reports whether p can be registered: it needs a name and at least
// one handler, unless it serves tools.
func (p *Policy) Validate() error {
	if p.Name == "" {
		return errors.New("pdk: policy has no name")
	}
	if len(p.Hooks()) == 0 && !p.ServesTools {
		return fmt.Errorf("pdk: policy %q has no hook handler", p.Name)
	}
	return nil
}

// Allow returns a decision that lets a call through unchanged.
func Allow() *abi.CallDecision { return &abi.CallDecision{Action: abi.ActionAllow} }

// Deny returns a decision that refuses a call; reason is shown to the caller.
func Deny(reason string) *abi.CallDecision {
	return &abi.CallDecision{Action: abi.ActionDeny, Reason: reason}
}

// DenyHidden returns a decision that refuses a call as if the tool did not
// exist: the client gets "unknown tool" (JSON-RPC -32602), not the reason,
// which goes to the host's log only (at debug level). Since ABI 1.2; a 1.1 host reads it as
// Deny.
func DenyHidden(reason string) *abi.CallDecision {
	return &abi.CallDecision{Action: abi.ActionDeny, Reason: reason, Hidden: true}
}

// Denyf is Deny with a formatted reason.
func Denyf(format string, args ...any) *abi.CallDecision {
	return Deny(fmt.Sprintf(format, args...))
}

// Rewrite returns a decision that replaces the call's arguments with args,
// which must encode as a JSON object (a map, a struct, or json.RawMessage).
func Rewrite(args any) (*abi.CallDecision, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("pdk: encoding rewritten arguments: %w", err)
	}
	if !isObject(raw) {
		return nil, errors.New("pdk: rewritten arguments must be a JSON object")
	}
	return &abi.CallDecision{Action: abi.ActionRewrite, Arguments: raw}, nil
}

// Respond returns a decision that answers a call without calling upstream.
func Respond(result *abi.CallToolResult) *abi.CallDecision {
	return &abi.CallDecision{Action: abi.ActionRespond, Result: result}
}

// TextResult returns a CallToolResult holding one text block.
func TextResult(text string, isError bool) *abi.CallToolResult {
	return &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: text}}, IsError: isError}
}

func isObject(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}
