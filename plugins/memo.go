package plugins

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mcphost-project/mcphost/abi"
)

// A memo keeps a plugin's earlier answers that its describe hints (ABI 1.1,
// abi.Hints) allow the host to reuse, so a guest is called only for what it
// has not judged before. Guest calls cost 0.1 to 10 ms of Go-in-Wasm JSON
// work; a hit costs a hash of the input.
//
// Answers are kept per Plugin, which is one module and one configuration:
// a reload that changes either builds a new Plugin and so starts afresh.
type memo struct {
	hints abi.Hints

	mu    sync.Mutex
	lists map[string]map[[sha256.Size]byte]listAnswer // by caller key, then tool
	calls map[string]*abi.CallDecision                // by caller key and tool
}

// listAnswer is what a per-tool tools_list did with one tool.
type listAnswer struct {
	kept bool
	tool abi.Tool
}

// Bounds on what a memo holds. Past maxMemoCallers or maxMemoCalls the
// table starts over, which costs one guest call per tool again. A caller's
// list table holds only the tools of its latest listing.
const (
	maxMemoCallers = 64
	maxMemoCalls   = 8192
)

// newMemo returns the memo for hints, or nil when there is nothing to reuse.
func newMemo(h abi.Hints) *memo {
	if !h.ListPerTool && !h.CallIgnoresArguments {
		return nil
	}
	return &memo{hints: h, lists: map[string]map[[sha256.Size]byte]listAnswer{}, calls: map[string]*abi.CallDecision{}}
}

// callerKey is the part of the memo keys that stands for the caller: the
// caller's encoding, or nothing when the plugin promised to ignore it.
func (m *memo) callerKey(caller abi.Caller) (string, error) {
	if m.hints.IgnoresCaller {
		return "", nil
	}
	b, err := json.Marshal(caller)
	return string(b), err
}

// toolsList runs p's tools_list on the tools it has not judged for this
// caller, and answers for the others from the memo. Its result is what
// calling the hook on all of tools would return, given the ListPerTool
// promise. called reports whether the guest was asked at all.
func (m *memo) toolsList(call func(sub []abi.Tool) ([]abi.Tool, error), caller abi.Caller, tools []abi.Tool, reserved map[string]bool) (_ []abi.Tool, called bool, _ error) {
	ck, err := m.callerKey(caller)
	if err != nil {
		return nil, false, err
	}
	keys := make([][sha256.Size]byte, len(tools))
	for i := range tools {
		b, err := json.Marshal(&tools[i])
		if err != nil {
			return nil, false, err
		}
		keys[i] = sha256.Sum256(b)
	}

	m.mu.Lock()
	known := m.lists[ck]
	answers := make([]listAnswer, len(tools))
	var missing []int
	for i, k := range keys {
		a, ok := known[k]
		if !ok {
			missing = append(missing, i)
			continue
		}
		answers[i] = a
	}
	m.mu.Unlock()

	if len(missing) > 0 {
		sub := make([]abi.Tool, len(missing))
		for j, i := range missing {
			sub[j] = tools[i]
		}
		got, err := call(sub)
		if err != nil {
			return nil, true, err
		}
		// The output was checked against sub: every tool came from it,
		// once. Match the answers back by server and tool.
		at := make(map[toolKey]int, len(missing))
		for _, i := range missing {
			at[toolKey{tools[i].Server, tools[i].Tool}] = i
		}
		for _, t := range got {
			answers[at[toolKey{t.Server, t.Tool}]] = listAnswer{kept: true, tool: t}
		}
	}

	out := make([]abi.Tool, 0, len(tools))
	names := make(map[string]bool, len(tools))
	next := make(map[[sha256.Size]byte]listAnswer, len(tools))
	for i, a := range answers {
		next[keys[i]] = a
		if !a.kept {
			continue
		}
		// Answers given in different calls may clash by name: check the
		// whole, as decodeToolsList checked each part.
		if names[a.tool.Name] || reserved[a.tool.Name] {
			return nil, len(missing) > 0, fmt.Errorf("%w: duplicate name %q across listings (the plugin promised listPerTool)", ErrInvalidOutput, a.tool.Name)
		}
		names[a.tool.Name] = true
		out = append(out, a.tool)
	}

	m.mu.Lock()
	if _, ok := m.lists[ck]; !ok && len(m.lists) >= maxMemoCallers {
		clear(m.lists)
	}
	m.lists[ck] = next
	m.mu.Unlock()
	return out, len(missing) > 0, nil
}

// callKey is the memo key of a tool_call, or ok false if the call's
// decision may not be reused.
func (m *memo) callKey(in *abi.ToolCallInput) (string, bool, error) {
	if !m.hints.CallIgnoresArguments {
		return "", false, nil
	}
	ck, err := m.callerKey(in.Caller)
	if err != nil {
		return "", false, err
	}
	ann, err := json.Marshal(in.Annotations)
	if err != nil {
		return "", false, err
	}
	b, err := json.Marshal([]string{ck, in.Name, in.Server, in.Tool, string(ann)})
	return string(b), err == nil, err
}

// decision returns a copy of the reused decision for key, if any.
func (m *memo) decision(key string) (*abi.CallDecision, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.calls[key]
	if !ok {
		return nil, false
	}
	cp := *d
	return &cp, true
}

// remember keeps d for key if it is an allow or a deny.
func (m *memo) remember(key string, d *abi.CallDecision) {
	if d.Action != abi.ActionAllow && d.Action != abi.ActionDeny {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.calls) >= maxMemoCalls {
		clear(m.calls)
	}
	cp := *d
	m.calls[key] = &cp
}
