package policies

import (
	"errors"
	"fmt"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// filter is builtin:allow (keep only what matches) and builtin:deny (drop
// what matches). Configuration:
//
//	tools   = ["files__read_*"]  # globs over the exposed name
//	servers = ["clock"]          # globs over the server name
//
// A tool matches if its name matches a tools pattern or its server a
// servers pattern. At least one of the two keys must be set.
type filter struct {
	name    string
	allow   bool
	tools   globs
	servers globs
}

func newFilter(name string, allow bool) pdk.Policy {
	f := &filter{name: name, allow: allow}
	return pdk.Policy{
		Name:      name,
		Version:   Version,
		Configure: f.configure,
		ToolsList: f.toolsList,
		ToolCall:  f.toolCall,
		// Decided by name and server alone.
		Hints: func() abi.Hints {
			return abi.Hints{ListPerTool: true, CallIgnoresArguments: true, IgnoresCaller: true}
		},
	}
}

func (f *filter) configure(cfg pdk.ConfigSource) error {
	tools, haveTools, err := stringList(cfg, "tools")
	if err != nil {
		return err
	}
	servers, haveServers, err := stringList(cfg, "servers")
	if err != nil {
		return err
	}
	if !haveTools && !haveServers {
		return errors.New(`set "tools" (globs over tool names) or "servers" (server names), or both`)
	}
	if f.tools, err = compileGlobs("tools", tools); err != nil {
		return err
	}
	f.servers, err = compileGlobs("servers", servers)
	return err
}

// matches returns the pattern that matched, or "".
func (f *filter) matches(name, server string) (string, bool) {
	if p, ok := f.tools.match(name); ok {
		return fmt.Sprintf("tools pattern %q", p), true
	}
	if p, ok := f.servers.match(server); ok {
		return fmt.Sprintf("servers pattern %q", p), true
	}
	return "", false
}

func (f *filter) keep(name, server string) bool {
	_, m := f.matches(name, server)
	return m == f.allow
}

func (f *filter) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	out := &abi.ToolsListOutput{Tools: make([]abi.Tool, 0, len(in.Tools))}
	for _, t := range in.Tools {
		if f.keep(t.Name, t.Server) {
			out.Tools = append(out.Tools, t)
		}
	}
	return out, nil
}

func (f *filter) toolCall(in *abi.ToolCallInput) (*abi.CallDecision, error) {
	why, m := f.matches(in.Name, in.Server)
	switch {
	case f.allow && !m:
		return pdk.Denyf("%s is not in the tools this gateway allows", in.Name), nil
	case !f.allow && m:
		return pdk.Denyf("%s is blocked by the gateway's deny policy (%s)", in.Name, why), nil
	}
	return pdk.Allow(), nil
}
