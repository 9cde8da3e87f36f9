package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/internal/suggest"
)

// The decoders below are the only code that reads plugin output. Each
// returns an error wrapping ErrInvalidDescribe or ErrInvalidOutput with the
// exact cause, never a zero value standing for "nothing".

type describeResult struct {
	abi.Describe
	warnings []string
}

// parseABI splits "MAJOR.MINOR".
func parseABI(v string) (major, minor int, err error) {
	a, b, ok := strings.Cut(v, ".")
	if !ok {
		return 0, 0, fmt.Errorf("abi %q is not MAJOR.MINOR", v)
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || major < 0 || minor < 0 || a[0] == '+' || b[0] == '+' {
		return 0, 0, fmt.Errorf("abi %q is not MAJOR.MINOR", v)
	}
	return major, minor, nil
}

// decodeDescribe checks describe output: valid JSON, a supported major ABI
// version, a name, and known hooks whose exports exist. Hooks a newer minor
// version may add are ignored with a warning.
func decodeDescribe(data []byte, exported func(string) bool) (describeResult, error) {
	var r describeResult
	if err := strictObject(data, &r.Describe); err != nil {
		return r, fmt.Errorf("%w: %w", ErrInvalidDescribe, err)
	}
	if r.ABI == "" {
		return r, fmt.Errorf("%w: no \"abi\" field", ErrInvalidDescribe)
	}
	major, minor, err := parseABI(r.ABI)
	if err != nil {
		return r, fmt.Errorf("%w: %w", ErrInvalidDescribe, err)
	}
	if major != abi.Major {
		return r, fmt.Errorf("%w: plugin was built for ABI %s, this host speaks %s", ErrABIVersion, r.ABI, abi.Version)
	}
	_, hostMinor, _ := parseABI(abi.Version)
	if r.Name == "" {
		return r, fmt.Errorf("%w: no \"name\" field", ErrInvalidDescribe)
	}
	seen := map[string]bool{}
	hooks := make([]string, 0, len(r.Hooks))
	for _, h := range r.Hooks {
		if seen[h] {
			continue
		}
		seen[h] = true
		export, ok := abi.ExportForHook(h)
		if !ok {
			if minor > hostMinor {
				r.warnings = append(r.warnings, fmt.Sprintf("ignoring hook %q of ABI %s, unknown to ABI %s", h, r.ABI, abi.Version))
				continue
			}
			return r, fmt.Errorf("%w: unknown hook %q", ErrInvalidDescribe, h)
		}
		if need := abi.HookMinor[h]; minor < need {
			return r, fmt.Errorf("%w: hook %q is new in ABI 1.%d, but the plugin declares ABI %s", ErrInvalidDescribe, h, need, r.ABI)
		}
		if !exported(export) {
			return r, fmt.Errorf("%w: hook %q is named but %s is not exported", ErrMissingExport, h, export)
		}
		hooks = append(hooks, h)
	}
	r.Hooks = hooks
	if h := r.Hints; h != nil {
		if h.ResultMinBytes < 0 {
			return r, fmt.Errorf("%w: hints.resultMinBytes is %d, below 0", ErrInvalidDescribe, h.ResultMinBytes)
		}
		if h.MessageMinBytes < 0 {
			return r, fmt.Errorf("%w: hints.messageMinBytes is %d, below 0", ErrInvalidDescribe, h.MessageMinBytes)
		}
		for hook := range h.Methods {
			if hook != abi.HookList && hook != abi.HookRequest && hook != abi.HookMessage {
				return r, fmt.Errorf("%w: hints.methods names hook %q; only list, request and message take methods", ErrInvalidDescribe, hook)
			}
		}
	}
	return r, nil
}

// strictObject decodes one JSON object into v, refusing anything else.
func strictObject(data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return fmt.Errorf("empty output")
	}
	if data[0] != '{' {
		return fmt.Errorf("output is not a JSON object")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return nil
}

type toolKey struct{ server, tool string }

// decodeToolsList checks tools_list output against the tools the plugin was
// given: every tool keeps a server and tool that were in the input, and
// names are valid and unique, also against reserved (the names of the tools
// outside the plugin's scope).
func decodeToolsList(data []byte, input []abi.Tool, reserved map[string]bool) ([]abi.Tool, error) {
	var out struct {
		Tools *[]abi.Tool `json:"tools"`
	}
	if err := strictObject(data, &out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	if out.Tools == nil {
		return nil, fmt.Errorf("%w: no \"tools\" array", ErrInvalidOutput)
	}
	known := make(map[toolKey]*abi.Tool, len(input))
	for i := range input {
		known[toolKey{input[i].Server, input[i].Tool}] = &input[i]
	}
	names := make(map[string]bool, len(*out.Tools))
	for i := range *out.Tools {
		t := &(*out.Tools)[i]
		in := known[toolKey{t.Server, t.Tool}]
		switch {
		case in == nil:
			return nil, fmt.Errorf("%w: tools[%d] %q: server %q tool %q was not in the input", ErrInvalidOutput, i, t.Name, t.Server, t.Tool)
		case t.Execution == nil || bytes.Equal(bytes.TrimSpace(t.Execution), []byte("null")):
			// A guest changes execution but cannot drop it: one built
			// before the field existed does not know to copy it.
			t.Execution = in.Execution
		case !isObject(t.Execution):
			return nil, fmt.Errorf("%w: tools[%d] %q: execution is not an object", ErrInvalidOutput, i, t.Name)
		}
		switch {
		case !abi.ValidToolName(t.Name):
			return nil, fmt.Errorf("%w: tools[%d]: invalid name %q (want 1..%d of [A-Za-z0-9_-], starting with a letter or _)", ErrInvalidOutput, i, t.Name, abi.MaxToolNameLength)
		case names[t.Name] || reserved[t.Name]:
			return nil, fmt.Errorf("%w: tools[%d]: duplicate name %q", ErrInvalidOutput, i, t.Name)
		}
		names[t.Name] = true
	}
	return *out.Tools, nil
}

// decodeCallDecision checks tool_call output.
func decodeCallDecision(data []byte) (*abi.CallDecision, error) {
	var d abi.CallDecision
	if err := strictObject(data, &d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	switch d.Action {
	case abi.ActionAllow, abi.ActionDeny:
	case abi.ActionRewrite:
		if !isObject(d.Arguments) {
			return nil, fmt.Errorf("%w: rewrite without an arguments object", ErrInvalidOutput)
		}
	case abi.ActionRespond:
		if err := checkResult(d.Result); err != nil {
			return nil, fmt.Errorf("%w: respond: %w", ErrInvalidOutput, err)
		}
		if err := checkResultDepth(data); err != nil {
			return nil, fmt.Errorf("%w: respond: %w", ErrInvalidOutput, err)
		}
	case "":
		return nil, fmt.Errorf("%w: no \"action\"", ErrInvalidOutput)
	default:
		return nil, fmt.Errorf("%w: unknown action %q", ErrInvalidOutput, d.Action)
	}
	return &d, nil
}

// decodeToolResult checks tool_result output. A nil result without an
// error means "unchanged": the guest passed the result on as it came.
func decodeToolResult(data []byte) (*abi.CallToolResult, error) {
	var out abi.ToolResultOutput
	if err := strictObject(data, &out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	if out.Unchanged {
		if out.Result != nil {
			return nil, fmt.Errorf("%w: both \"unchanged\" and a \"result\"", ErrInvalidOutput)
		}
		return nil, nil
	}
	if err := checkResult(out.Result); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	if err := checkResultDepth(data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	return out.Result, nil
}

// checkResultDepth holds a result a policy hook gave (data is the hook's
// output, the result one level down in it) to a tool plugin's limit,
// MaxResultDepth: the host's own decoding stops only where the client's
// does, and the JSON-RPC message around the result is deeper still.
func checkResultDepth(data []byte) error {
	if d := jsonDepth(data) - 1; d > MaxResultDepth {
		return fmt.Errorf("%w: the result is nested %d levels deep", ErrTooDeep, d)
	}
	return nil
}

func checkResult(r *abi.CallToolResult) error {
	if r == nil {
		return fmt.Errorf("no \"result\"")
	}
	if r.Content == nil {
		r.Content = []abi.Content{}
	}
	for i, c := range r.Content {
		switch c.Type {
		case "text", "image", "audio", "resource", "resource_link":
		default:
			return fmt.Errorf("content[%d]: unknown type %q", i, c.Type)
		}
	}
	if s := bytes.TrimSpace(r.StructuredContent); len(s) > 0 && s[0] != '{' && !bytes.Equal(s, []byte("null")) {
		return fmt.Errorf("structuredContent is not an object")
	}
	return nil
}

type itemKey struct{ server, name string }

// decodeList checks list output against the entries the plugin was given:
// every entry keeps the server and name of an input entry, at most once,
// and its item is a JSON object.
func decodeList(data []byte, input []abi.Item) ([]abi.Item, error) {
	var out struct {
		Items *[]abi.Item `json:"items"`
	}
	if err := strictObject(data, &out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	if out.Items == nil {
		return nil, fmt.Errorf("%w: no \"items\" array", ErrInvalidOutput)
	}
	known := make(map[itemKey]bool, len(input))
	for _, it := range input {
		known[itemKey{it.Server, it.Name}] = true
	}
	seen := make(map[itemKey]bool, len(*out.Items))
	for i, it := range *out.Items {
		k := itemKey{it.Server, it.Name}
		switch {
		case !known[k]:
			return nil, fmt.Errorf("%w: items[%d]: server %q name %q was not in the input", ErrInvalidOutput, i, it.Server, it.Name)
		case seen[k]:
			return nil, fmt.Errorf("%w: items[%d]: server %q name %q appears twice", ErrInvalidOutput, i, it.Server, it.Name)
		case !isObject(it.Item):
			return nil, fmt.Errorf("%w: items[%d]: item is not a JSON object", ErrInvalidOutput, i)
		}
		seen[k] = true
	}
	return *out.Items, nil
}

// decodeRequestDecision checks request output: allow, or deny with an
// optional reason.
func decodeRequestDecision(data []byte) (*abi.RequestDecision, error) {
	var d abi.RequestDecision
	if err := strictObject(data, &d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	switch d.Action {
	case abi.ActionAllow, abi.ActionDeny:
	case "":
		return nil, fmt.Errorf("%w: no \"action\"", ErrInvalidOutput)
	default:
		return nil, fmt.Errorf("%w: action %q is not allow or deny", ErrInvalidOutput, d.Action)
	}
	return &d, nil
}

// decodeMessage checks message output. A nil message without an error
// means "unchanged". That the message decodes as the method's MCP type is
// the host's to check, which knows the type.
func decodeMessage(data []byte) (json.RawMessage, error) {
	var out abi.MessageOutput
	if err := strictObject(data, &out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
	}
	if out.Unchanged {
		if len(out.Message) > 0 {
			return nil, fmt.Errorf("%w: both \"unchanged\" and a \"message\"", ErrInvalidOutput)
		}
		return nil, nil
	}
	if !isObject(out.Message) {
		return nil, fmt.Errorf("%w: no \"message\" object", ErrInvalidOutput)
	}
	return out.Message, nil
}

func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// ConfigKeyError is a configuration key the plugin does not read, for a
// plugin that declares the keys it reads (abi.Describe.ConfigKeys). It
// wraps ErrConfig.
type ConfigKeyError struct {
	Key   string
	Known []string // the keys the plugin reads, sorted
}

func (e *ConfigKeyError) Error() string {
	known := "no configuration"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("config %q: the plugin reads no such key.%s It reads: %s", e.Key, suggest.DidYouMean(e.Key, e.Known), known)
}

func (e *ConfigKeyError) Unwrap() error { return ErrConfig }

// checkConfigKeys refuses a key of config that a plugin declaring known
// (nil: it declares nothing) does not read, the reserved ones aside.
func checkConfigKeys(config map[string]string, declared *[]string) error {
	if declared == nil {
		return nil
	}
	known := *declared
	var keys []string
	for k := range config {
		if !strings.HasPrefix(k, abi.ConfigKeyPrefix) && !slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	return &ConfigKeyError{Key: keys[0], Known: known}
}
