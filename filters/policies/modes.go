package policies

import (
	"encoding/json"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// Modes of builtin:modes.
const (
	ModeAct  = "act"
	ModePlan = "plan"
)

// modes is builtin:modes: in plan mode only tools whose annotations say
// readOnlyHint true are listed and admitted. Configuration:
//
//	mode     = "plan"   # or "act", the default: everything
//	meta_key = "mode"   # optional: a caller's _meta[meta_key] = "plan" narrows
//	                    # act to plan for that request; it never widens plan
//
// and the caller condition (callerCondition): a caller it does not apply to
// passes untouched, whatever the mode.
type modes struct {
	refusal
	callers callerCondition
	mode    string
	metaKey string
}

func newModes() pdk.Policy {
	m := &modes{}
	return pdk.Policy{
		Name:      "modes",
		Version:   Version,
		Configure: m.configure,
		ToolsList: m.toolsList,
		ToolCall:  m.toolCall,
		// The mode comes from the caller only when meta_key lets it,
		// and whether it applies only when a caller condition is set.
		Hints: func() abi.Hints {
			return abi.Hints{ListPerTool: true, CallIgnoresArguments: true, IgnoresCaller: m.metaKey == "" && !m.callers.dependsOnCaller()}
		},
	}
}

func (m *modes) configure(cfg pdk.ConfigSource) (err error) {
	if err := m.refusal.configure(cfg); err != nil {
		return err
	}
	if err := m.callers.configure(cfg); err != nil {
		return err
	}
	m.metaKey = cfg.String("meta_key", "")
	m.mode, err = enum(cfg, "mode", ModeAct, ModePlan)
	return err
}

// modeFor returns the mode for a caller: act for a caller the caller
// condition exempts, else the configured one, narrowed to plan when the
// caller asks for it through _meta.
func (m *modes) modeFor(c *abi.Caller) string {
	if !m.callers.applies(c) {
		return ModeAct
	}
	if m.mode == ModePlan || m.metaKey == "" || len(c.Meta) == 0 {
		return m.mode
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(c.Meta, &meta) != nil {
		return m.mode
	}
	var v string
	if json.Unmarshal(meta[m.metaKey], &v) == nil && v == ModePlan {
		return ModePlan
	}
	return m.mode
}

func readOnly(a *abi.Annotations) bool {
	return a != nil && a.ReadOnlyHint != nil && *a.ReadOnlyHint
}

func (m *modes) toolsList(in *abi.ToolsListInput) (*abi.ToolsListOutput, error) {
	if m.modeFor(&in.Caller) != ModePlan {
		return &abi.ToolsListOutput{Tools: in.Tools}, nil
	}
	out := &abi.ToolsListOutput{Tools: make([]abi.Tool, 0, len(in.Tools))}
	for _, t := range in.Tools {
		if readOnly(t.Annotations) {
			out.Tools = append(out.Tools, t)
		}
	}
	return out, nil
}

func (m *modes) toolCall(in *abi.ToolCallInput) (*abi.CallDecision, error) {
	if m.modeFor(&in.Caller) == ModePlan && !readOnly(in.Annotations) {
		return m.refuseCall("%s is not available in plan mode: only tools annotated read-only (readOnlyHint) may run", in.Name), nil
	}
	return pdk.Allow(), nil
}
