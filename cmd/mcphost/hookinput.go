package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcphost-project/mcphost/abi"
)

// hookInputWarnings reads a `plugin test` input as the hook's input type
// and says what the host would never send: a field the type does not have
// (a misspelt "tool_name" is silently empty to the plugin), or, for the
// call hooks, no name, server or tool, which the host always fills. The
// test still runs: a plugin author may mean a partial input.
func hookInputWarnings(hook string, in []byte) []string {
	var v any
	switch hook {
	case abi.HookToolsList:
		v = new(abi.ToolsListInput)
	case abi.HookToolCall:
		v = new(abi.ToolCallInput)
	case abi.HookToolResult:
		v = new(abi.ToolResultInput)
	case abi.HookList:
		v = new(abi.ListInput)
	case abi.HookRequest:
		v = new(abi.RequestInput)
	case abi.HookMessage:
		v = new(abi.MessageInput)
	default:
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return []string{fmt.Sprintf("the input is not a %s input as the host sends it: %v", hook, err)}
	}
	var warns []string
	// The names the host puts in both call hooks' inputs.
	names := func(name, server, tool string) {
		for _, f := range []struct{ field, what, value string }{
			{"name", "the tool's exposed name, like notes__delete_note", name},
			{"server", "the server's name in the config", server},
			{"tool", "the tool's name on its server", tool},
		} {
			if f.value == "" {
				warns = append(warns, fmt.Sprintf("the input has no %q (%s), which the host always sets", f.field, f.what))
			}
		}
	}
	switch in := v.(type) {
	case *abi.ToolCallInput:
		names(in.Name, in.Server, in.Tool)
	case *abi.ToolResultInput:
		names(in.Name, in.Server, in.Tool)
		if in.Result == nil {
			warns = append(warns, `the input has no "result", which the host always sets`)
		}
	}
	return warns
}
