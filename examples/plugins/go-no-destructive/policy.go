package main

import (
	"fmt"
	"path"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// Configuration keys, all optional:
//
//	deny   = ["*__drop_*", "shell__*"] # globs (path.Match) over the exposed name or the upstream tool name: always blocked
//	allow  = ["fs__delete_tmp"]        # globs that exempt a tool from the annotation rule (not from deny)
//	strict = true                      # also block tools that do not say they are safe: MCP's default for a missing
//	                                   # destructiveHint is true, unless readOnlyHint is true
const (
	configDeny   = "deny"
	configAllow  = "allow"
	configStrict = "strict"
)

// rules is a configured no-destructive policy.
type rules struct {
	deny, allow []string
	strict      bool
}

// New returns the no-destructive policy. Its configuration is read by
// Configure, once per instance, so a bad pattern is refused at load time.
func New() pdk.Policy {
	r := &rules{}
	return pdk.Policy{
		Name:      "no-destructive",
		Version:   "1.0.0",
		Configure: r.configure,
		ToolsList: r.toolsList,
		ToolCall:  r.toolCall,
		// Promises that let mcphost reuse answers (abi/SPEC.md section
		// 5.12): each tool is judged alone, from its name and
		// annotations, whoever asks and whatever the arguments.
		Hints: func() abi.Hints {
			return abi.Hints{ListPerTool: true, CallIgnoresArguments: true, IgnoresCaller: true}
		},
	}
}

func (r *rules) configure(cfg pdk.ConfigSource) error {
	var err error
	if r.deny, err = patterns(cfg, configDeny); err != nil {
		return err
	}
	if r.allow, err = patterns(cfg, configAllow); err != nil {
		return err
	}
	r.strict, err = cfg.Bool(configStrict, false)
	return err
}

func patterns(cfg pdk.ConfigSource, key string) ([]string, error) {
	list, err := cfg.Strings(key)
	if err != nil {
		return nil, err
	}
	for _, p := range list {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("config %q: pattern %q: %w", key, p, err)
		}
	}
	return list, nil
}

// toolsList hides every blocked tool and keeps the rest as they are.
func (r *rules) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	out := &abi.ToolsListOutput{Tools: make([]abi.Tool, 0, len(in.Tools))}
	for _, t := range in.Tools {
		if reason := r.blocked(t.Name, t.Tool, t.Annotations); reason == "" {
			out.Tools = append(out.Tools, t)
		}
	}
	return out, nil
}

// toolCall refuses a call to a blocked tool, in case a client calls a tool
// it was not shown.
func (r *rules) toolCall(in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if reason := r.blocked(in.Name, in.Tool, in.Annotations); reason != "" {
		return pdk.Denyf("%s is blocked by the no-destructive policy: %s", in.Name, reason), nil
	}
	return pdk.Allow(), nil
}

// blocked returns why the tool is blocked, or "" if it is not.
func (r *rules) blocked(name, tool string, a *abi.Annotations) string {
	if p := match(r.deny, name, tool); p != "" {
		return fmt.Sprintf("its name matches the deny pattern %q", p)
	}
	if match(r.allow, name, tool) != "" {
		return ""
	}
	switch {
	case a == nil:
		if r.strict {
			return "it has no annotations, so it may be destructive"
		}
	case a.DestructiveHint != nil && *a.DestructiveHint:
		return "it is annotated as destructive (destructiveHint)"
	case r.strict && a.DestructiveHint == nil && (a.ReadOnlyHint == nil || !*a.ReadOnlyHint):
		return "it is not annotated as read-only or non-destructive, so it may be destructive"
	}
	return ""
}

// match returns the first pattern that matches name or tool, or "".
func match(patterns []string, name, tool string) string {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return p
		}
		if ok, _ := path.Match(p, tool); ok {
			return p
		}
	}
	return ""
}
