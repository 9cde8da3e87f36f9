package pdk

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	// segmentio's codec compiles a decoder per type instead of walking
	// reflect values per field: in a Go guest, where every function call
	// is dear, it halves the cost of a hook (docs/BENCHMARKS.md).
	"github.com/segmentio/encoding/json"

	"github.com/mcphost-project/mcphost/abi"
)

// ErrNoHandler is returned by Guest.Call for a hook export whose handler is
// nil. A conforming host never calls it, since describe does not name it.
var ErrNoHandler = errors.New("pdk: hook not implemented by this plugin")

// Guest runs a Policy the way a plugin instance does: JSON in, JSON out, one
// export at a time. The Wasm exports of this package call a Guest built from
// the registered policy; tests can build their own with NewGuest. A Guest is
// not safe for concurrent use, like the instance it stands for.
type Guest struct {
	policy     Policy
	config     ConfigSource
	configured bool
	configErr  error
	// unchanged: the host understands {"unchanged": true} (ABI 1.1).
	unchanged bool
	// configKeys are the keys Configure looked up, sorted (StrictConfig).
	configKeys []string
}

// NewGuest returns a Guest for p reading its configuration from config,
// which may be nil for none.
func NewGuest(p Policy, config ConfigSource) *Guest {
	return &Guest{policy: p, config: config}
}

// Call runs export (abi.ExportDescribe or a hook export) on input and
// returns the output bytes. An error is what the plugin reports to the host
// as a plugin error: the handler's own error message, unwrapped, or a
// message from pdk for undecodable input, invalid handler output, a panic
// or an output larger than abi.MaxOutputSize.
func (g *Guest) Call(export string, input []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("pdk: panic in %s: %v", export, r)
		}
	}()
	if err := g.policy.Validate(); err != nil {
		return nil, err
	}
	if !g.configured {
		g.configured = true
		g.unchanged = hostHasMinor(g.config, 1)
		if g.policy.Configure != nil {
			read := map[string]bool{}
			src := ConfigSource(func(key string) (string, bool) {
				if !strings.HasPrefix(key, abi.ConfigKeyPrefix) {
					read[key] = true
				}
				return g.config.Lookup(key)
			})
			if err := g.policy.Configure(src); err != nil {
				g.configErr = fmt.Errorf("pdk: configuring %s: %w", g.policy.Name, err)
			}
			for k := range read {
				g.configKeys = append(g.configKeys, k)
			}
			slices.Sort(g.configKeys)
		}
	}
	if g.configErr != nil {
		// The host asks for the keys read, to name a misspelt one.
		if v, _ := g.config.Lookup(abi.ConfigDescribeKeys); export == abi.ExportDescribe && g.policy.StrictConfig && v == "1" {
			return json.Marshal(g.policy.describe(g.configKeys))
		}
		return nil, g.configErr
	}

	var v any
	switch export {
	case abi.ExportDescribe:
		v = g.policy.describe(g.configKeys)
	case abi.ExportToolsList:
		v, err = g.toolsList(input)
	case abi.ExportToolCall:
		v, err = g.toolCall(input)
	case abi.ExportToolResult:
		v, err = g.toolResult(input)
	case abi.ExportList:
		v, err = g.list(input)
	case abi.ExportRequest:
		v, err = g.request(input)
	case abi.ExportMessage:
		v, err = g.message(input)
	default:
		return nil, fmt.Errorf("pdk: unknown export %q", export)
	}
	if err != nil {
		return nil, err
	}
	out, err = json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("pdk: encoding %s output: %w", export, err)
	}
	if len(out) > abi.MaxOutputSize {
		return nil, fmt.Errorf("pdk: %s output is %d bytes, over the limit of %d", export, len(out), abi.MaxOutputSize)
	}
	return out, nil
}

func (g *Guest) toolsList(input []byte) (*abi.ToolsListOutput, error) {
	h := g.policy.ToolsList
	if h == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoHandler, abi.HookToolsList)
	}
	var in abi.ToolsListInput
	if err := decode(abi.HookToolsList, input, &in); err != nil {
		return nil, err
	}
	out, err := h(&in)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = &abi.ToolsListOutput{Tools: in.Tools}
	}
	if out.Tools == nil {
		out.Tools = []abi.Tool{}
	}
	return out, nil
}

func (g *Guest) toolCall(input []byte) (*abi.CallDecision, error) {
	h := g.policy.ToolCall
	if h == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoHandler, abi.HookToolCall)
	}
	var in abi.ToolCallInput
	if err := decode(abi.HookToolCall, input, &in); err != nil {
		return nil, err
	}
	d, err := h(&in)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return Allow(), nil
	}
	switch d.Action {
	case abi.ActionAllow, abi.ActionDeny:
	case abi.ActionRewrite:
		if !isObject(d.Arguments) {
			return nil, errors.New("pdk: tool_call handler returned a rewrite whose arguments are not a JSON object")
		}
	case abi.ActionRespond:
		if d.Result == nil {
			return nil, errors.New("pdk: tool_call handler returned a respond decision without a result")
		}
		normalizeResult(d.Result)
	case "":
		return nil, errors.New("pdk: tool_call handler returned a decision without an action")
	default:
		return nil, fmt.Errorf("pdk: tool_call handler returned unknown action %q", d.Action)
	}
	return d, nil
}

func (g *Guest) toolResult(input []byte) (*abi.ToolResultOutput, error) {
	h := g.policy.ToolResult
	if h == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoHandler, abi.HookToolResult)
	}
	var in abi.ToolResultInput
	if err := decode(abi.HookToolResult, input, &in); err != nil {
		return nil, err
	}
	out, err := h(&in)
	if err != nil {
		return nil, err
	}
	if out == nil {
		if g.unchanged {
			return &abi.ToolResultOutput{Unchanged: true}, nil
		}
		out = &abi.ToolResultOutput{Result: in.Result}
	}
	if out.Result == nil {
		return nil, errors.New("pdk: tool_result handler returned no result")
	}
	out.Unchanged = false
	normalizeResult(out.Result)
	return out, nil
}

func (g *Guest) list(input []byte) (*abi.ListOutput, error) {
	h := g.policy.List
	if h == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoHandler, abi.HookList)
	}
	var in abi.ListInput
	if err := decode(abi.HookList, input, &in); err != nil {
		return nil, err
	}
	out, err := h(&in)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = &abi.ListOutput{Items: in.Items}
	}
	if out.Items == nil {
		out.Items = []abi.Item{}
	}
	return out, nil
}

func (g *Guest) request(input []byte) (*abi.RequestDecision, error) {
	h := g.policy.Request
	if h == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoHandler, abi.HookRequest)
	}
	var in abi.RequestInput
	if err := decode(abi.HookRequest, input, &in); err != nil {
		return nil, err
	}
	d, err := h(&in)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return &abi.RequestDecision{Action: abi.ActionAllow}, nil
	}
	switch d.Action {
	case abi.ActionAllow, abi.ActionDeny:
	default:
		return nil, fmt.Errorf("pdk: request handler returned action %q; want allow or deny", d.Action)
	}
	return d, nil
}

func (g *Guest) message(input []byte) (*abi.MessageOutput, error) {
	h := g.policy.Message
	if h == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoHandler, abi.HookMessage)
	}
	var in abi.MessageInput
	if err := decode(abi.HookMessage, input, &in); err != nil {
		return nil, err
	}
	out, err := h(&in)
	if err != nil {
		return nil, err
	}
	if out == nil || out.Unchanged {
		return &abi.MessageOutput{Unchanged: true}, nil
	}
	if !isObject(out.Message) {
		return nil, errors.New("pdk: message handler returned a message that is not a JSON object")
	}
	return out, nil
}

// hostHasMinor reports whether the host announced (abi.ConfigABI) ABI
// 1.minor or later.
func hostHasMinor(config ConfigSource, minor int) bool {
	v, ok := config.Lookup(abi.ConfigABI)
	if !ok {
		return false
	}
	major, rest, ok := strings.Cut(v, ".")
	if !ok || major != "1" {
		return false
	}
	n, err := strconv.Atoi(rest)
	return err == nil && n >= minor
}

// normalizeResult makes sure content encodes as an array, as MCP requires.
func normalizeResult(r *abi.CallToolResult) {
	if r.Content == nil {
		r.Content = []abi.Content{}
	}
}

func decode(hook string, input []byte, v any) error {
	if err := json.Unmarshal(input, v); err != nil {
		// segmentio's errors quote the offending input, which may be
		// megabytes: report encoding/json's instead.
		if stdErr := stdjson.Unmarshal(input, v); stdErr != nil {
			err = stdErr
		}
		return fmt.Errorf("pdk: decoding %s input: %w", hook, err)
	}
	return nil
}
