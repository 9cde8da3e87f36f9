// Package compat proves a plugin keeps the ABI, whatever language it is
// written in: it runs the .wasm in the real runtime, as mcphost does.
//
// Two kinds of check. Probe asks what the ABI asks of every plugin,
// whatever its policy: describe is valid; every hook it names answers a
// minimal input, and one full of fields it cannot know (later minor
// versions add fields), with output the host accepts; and every promise
// its hints make holds on inputs built to test it. RunCases runs cases
// written for one plugin, in the language-neutral format of abi/policytest
// (a txtar file: a "hook:" line, config.json, input.json, and output.json
// or error), against its .wasm. `mcphost plugin check` runs both.
package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/policytest"
	"github.com/mcphost-project/mcphost/plugins"
)

// Result is the outcome of one check.
type Result struct {
	Name string
	Err  error // nil: passed
}

// Failed counts the results with an error.
func Failed(rs []Result) int {
	n := 0
	for _, r := range rs {
		if r.Err != nil {
			n++
		}
	}
	return n
}

// Probe runs the ABI's own checks on spec's plugin (spec.Config is its
// configuration, which must load).
func Probe(ctx context.Context, rt *plugins.Runtime, spec plugins.Spec) []Result {
	spec.Instances = 1
	p, err := rt.Load(ctx, spec)
	if err != nil {
		return []Result{{Name: "describe", Err: err}}
	}
	desc := p.Describe()
	exports := p.Exports()
	p.Close(context.WithoutCancel(ctx))
	rs := []Result{{Name: "describe"}}
	if slices.Contains(exports, abi.ExportTools) || spec.Kind == plugins.KindTools {
		rs = append(rs, toolProbes(ctx, rt, spec)...)
	}
	for _, hook := range desc.Hooks {
		for _, pr := range probes[hook] {
			if pr.method != "" && !desc.Hints.WantsMethod(hook, pr.method) {
				continue
			}
			_, err := plugins.RunHook(ctx, rt, spec, hook, []byte(pr.input))
			rs = append(rs, Result{Name: hook + ": " + pr.name, Err: err})
		}
	}
	if desc.Hints != nil {
		rs = append(rs, promises(ctx, rt, spec, desc)...)
	}
	return rs
}

// probe is an input for hook; method, for the hooks of ABI 1.2, is the
// MCP method it carries: a plugin whose hints leave that method out is not
// asked, as the host would not ask it.
type probe struct{ name, method, input string }

// unknown are fields no version of the ABI defines, put everywhere a later
// minor version could add one.
const unknown = `"zzFuture":{"a":[1,"x",null]},"zzFlag":true`

// probes are inputs every plugin must answer with valid output.
// authenticated is a caller with every identity field of ABI 1.3.
const authenticated = `{"sessionId":"s1","transport":"http","subject":"alice","groups":["eng","admins"],"attributes":{"team":"core"},"authMethod":"oauth","identity":"alice"}`

var probes = map[string][]probe{
	abi.HookToolsList: {
		{"an empty list", "", `{"caller":{},"tools":[]}`},
		{"one tool", "", `{"caller":{"transport":"http"},"tools":[{"name":"s__t","server":"s","tool":"t","inputSchema":{"type":"object"}}]}`},
		{"an authenticated caller (1.3)", "", `{"caller":` + authenticated + `,"tools":[{"name":"s__t","server":"s","tool":"t","inputSchema":{"type":"object"}}]}`},
		{"unknown fields", "", `{"caller":{"transport":"http",` + unknown + `},` + unknown + `,"tools":[{"name":"s__t","server":"s","tool":"t","inputSchema":{"type":"object"},` + unknown + `}]}`},
	},
	abi.HookToolCall: {
		{"no arguments", "", `{"caller":{},"name":"s__t","server":"s","tool":"t"}`},
		{"an authenticated caller (1.3)", "", `{"caller":` + authenticated + `,"name":"s__t","server":"s","tool":"t","arguments":{}}`},
		{"unknown fields", "", `{"caller":{` + unknown + `},"name":"s__t","server":"s","tool":"t","arguments":{"a":1},"annotations":{"readOnlyHint":true,` + unknown + `},` + unknown + `}`},
	},
	abi.HookToolResult: {
		{"an empty result", "", `{"caller":{},"name":"s__t","server":"s","tool":"t","result":{"content":[]}}`},
		{"an authenticated caller (1.3)", "", `{"caller":` + authenticated + `,"name":"s__t","server":"s","tool":"t","result":{"content":[{"type":"text","text":"hi"}]}}`},
		{"every content type", "", `{"caller":{},"name":"s__t","server":"s","tool":"t","result":{"content":[{"type":"text","text":"hi"},{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"audio","data":"aGk=","mimeType":"audio/wav"},{"type":"resource","resource":{"uri":"x://y","text":"t"}},{"type":"resource_link","uri":"x://y","name":"y"}],"structuredContent":{"a":1},"isError":true}}`},
		{"unknown fields", "", `{"caller":{` + unknown + `},"name":"s__t","server":"s","tool":"t","result":{"content":[{"type":"text","text":"hi",` + unknown + `}],` + unknown + `},` + unknown + `}`},
	},
	abi.HookList: {
		{"an empty listing", "resources/list", `{"caller":{},"method":"resources/list","items":[]}`},
		{"an authenticated caller (1.3)", "prompts/list", `{"caller":` + authenticated + `,"method":"prompts/list","items":[{"server":"s","name":"s__p","item":{"name":"s__p"}}]}`},
		{"unknown fields", "prompts/list", `{"caller":{` + unknown + `},"method":"prompts/list","items":[{"server":"s","name":"s__p","item":{"name":"s__p",` + unknown + `},` + unknown + `}],` + unknown + `}`},
	},
	abi.HookRequest: {
		{"a read", "resources/read", `{"caller":{},"method":"resources/read","server":"s","name":"x://y","params":{"uri":"x://y"}}`},
		{"an authenticated caller (1.3)", "resources/read", `{"caller":` + authenticated + `,"method":"resources/read","server":"s","name":"x://y","params":{"uri":"x://y"}}`},
		{"an upstream's sampling", "sampling/createMessage", `{"caller":{},"method":"sampling/createMessage","server":"s","params":{"messages":[],"maxTokens":1}}`},
		{"unknown fields", "prompts/get", `{"caller":{` + unknown + `},"method":"prompts/get","server":"s","name":"s__p","params":{"name":"p"},` + unknown + `}`},
	},
	abi.HookMessage: {
		{"a resource", "resources/read", `{"caller":{},"method":"resources/read","server":"s","name":"x://y","message":{"contents":[{"uri":"x://y","text":"hello"}]}}`},
		{"an authenticated caller (1.3)", "resources/read", `{"caller":` + authenticated + `,"method":"resources/read","server":"s","name":"x://y","message":{"contents":[{"uri":"x://y","text":"hello"}]}}`},
		{"a log message", "notifications/message", `{"caller":{},"method":"notifications/message","server":"s","message":{"level":"info","data":{"k":["v"]}}}`},
		{"unknown fields", "prompts/get", `{"caller":{` + unknown + `},"method":"prompts/get","server":"s","name":"s__p","message":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],` + unknown + `},` + unknown + `}`},
	},
}

// promises checks the hints desc makes, on inputs built to fall within each.
func promises(ctx context.Context, rt *plugins.Runtime, spec plugins.Spec, desc abi.Describe) []Result {
	h := desc.Hints
	has := func(hook string) bool {
		for _, x := range desc.Hooks {
			if x == hook {
				return true
			}
		}
		return false
	}
	var rs []Result
	unchanged := func(name, hook, input string, result func([]byte) ([]byte, error), want []byte) {
		out, err := plugins.RunHook(ctx, rt, spec, hook, []byte(input))
		if err == nil {
			var got []byte
			if got, err = result(out); err == nil {
				if eq, _ := policytest.EqualJSON(got, want); !eq {
					err = fmt.Errorf("changed %s into %s, though the hints promise it unchanged", want, got)
				}
			}
		}
		rs = append(rs, Result{Name: "hints: " + name, Err: err})
	}
	field := func(key string) func([]byte) ([]byte, error) {
		return func(out []byte) ([]byte, error) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(out, &m); err != nil {
				return nil, err
			}
			return m[key], nil
		}
	}
	smallResult := `{"content":[{"type":"text","text":"ok"}]}`
	if has(abi.HookToolResult) && h.ResultMinBytes > len(smallResult)+100 {
		unchanged("resultMinBytes", abi.HookToolResult, `{"caller":{},"name":"s__t","server":"s","tool":"t","result":`+smallResult+`}`, field("result"), []byte(smallResult))
	}
	if has(abi.HookToolResult) && len(h.ResultKeywords) > 0 {
		r := `{"content":[{"type":"text","text":"plain words without any of them"}]}`
		if !containsAny(r, h.ResultKeywords) {
			unchanged("resultKeywords", abi.HookToolResult, `{"caller":{},"name":"s__t","server":"s","tool":"t","result":`+r+`}`, field("result"), []byte(r))
		}
	}
	msg := `{"contents":[{"uri":"x://y","text":"plain words without any of them"}]}`
	if has(abi.HookMessage) && h.WantsMethod(abi.HookMessage, abi.MethodResourcesRead) && len(h.MessageKeywords) > 0 && !containsAny(msg, h.MessageKeywords) {
		unchanged("messageKeywords", abi.HookMessage, `{"caller":{},"method":"resources/read","server":"s","name":"x://y","message":`+msg+`}`, messageOf(msg), []byte(msg))
	}
	if has(abi.HookToolsList) && h.ListPerTool {
		rs = append(rs, Result{Name: "hints: listPerTool", Err: perTool(ctx, rt, spec)})
	}
	return rs
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// messageOf reads a message output: its message, or msg for unchanged.
func messageOf(msg string) func([]byte) ([]byte, error) {
	return func(out []byte) ([]byte, error) {
		var o abi.MessageOutput
		if err := json.Unmarshal(out, &o); err != nil {
			return nil, err
		}
		if o.Unchanged {
			return []byte(msg), nil
		}
		return o.Message, nil
	}
}

// perTool checks listPerTool: the listing of three tools is, in order, what
// listing each alone gives.
func perTool(ctx context.Context, rt *plugins.Runtime, spec plugins.Spec) error {
	tools := []string{
		`{"name":"a__read","server":"a","tool":"read","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
		`{"name":"a__write","server":"a","tool":"write","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true}}`,
		`{"name":"b__x","server":"b","tool":"x","description":"X.","inputSchema":{"type":"object"}}`,
	}
	list := func(ts ...string) ([]json.RawMessage, error) {
		out, err := plugins.RunHook(ctx, rt, spec, abi.HookToolsList, []byte(`{"caller":{},"tools":[`+strings.Join(ts, ",")+`]}`))
		if err != nil {
			return nil, err
		}
		var o struct{ Tools []json.RawMessage }
		if err := json.Unmarshal(out, &o); err != nil {
			return nil, err
		}
		return o.Tools, nil
	}
	whole, err := list(tools...)
	if err != nil {
		return err
	}
	var alone []json.RawMessage
	for _, t := range tools {
		got, err := list(t)
		if err != nil {
			return err
		}
		alone = append(alone, got...)
	}
	a, _ := json.Marshal(whole)
	b, _ := json.Marshal(alone)
	if eq, _ := policytest.EqualJSON(a, b); !eq {
		return fmt.Errorf("listing three tools gave %s; listing each alone %s, though the hints promise them equal", a, b)
	}
	return nil
}

// RunCases runs the cases in files (txtar, abi/policytest's format; a
// directory stands for its *.txtar) against spec's plugin, each with its
// own config.json merged over spec.Config.
func RunCases(ctx context.Context, rt *plugins.Runtime, spec plugins.Spec, files []string) ([]Result, error) {
	var paths []string
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.IsDir() {
			m, _ := filepath.Glob(filepath.Join(f, "*.txtar"))
			paths = append(paths, m...)
			continue
		}
		paths = append(paths, f)
	}
	var rs []Result
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		c, err := policytest.ParseCase(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rs = append(rs, Result{Name: path, Err: RunCase(ctx, rt, spec, c)})
	}
	return rs, nil
}

// RunCase runs one case against spec's plugin, as the host would run it.
func RunCase(ctx context.Context, rt *plugins.Runtime, spec plugins.Spec, c *policytest.Case) error {
	config := make(map[string]string, len(spec.Config)+len(c.Config))
	for k, v := range spec.Config {
		config[k] = v
	}
	for k, v := range c.Config {
		config[k] = v
	}
	spec.Config, spec.Instances = config, 1
	var got []byte
	var err error
	if c.Hook == "describe" {
		var p *plugins.Plugin
		if p, err = rt.Load(ctx, spec); err == nil {
			got, _ = json.Marshal(p.Describe())
			p.Close(context.WithoutCancel(ctx))
		}
	} else {
		got, err = plugins.RunHook(ctx, rt, spec, c.Hook, c.Input)
	}
	switch {
	case c.Error != "" && err == nil:
		return fmt.Errorf("got output %s, want an error containing %q", got, c.Error)
	case c.Error != "":
		if !strings.Contains(err.Error(), c.Error) {
			return fmt.Errorf("got error %q, want it to contain %q", err, c.Error)
		}
		return nil
	case err != nil:
		return fmt.Errorf("got error %v, want output %s", err, bytes.TrimSpace(c.Output))
	}
	eq, err := policytest.EqualJSON(got, c.Output)
	if err != nil {
		return err
	}
	if !eq {
		return fmt.Errorf("got %s\nwant %s", got, bytes.TrimSpace(c.Output))
	}
	return nil
}

// toolProbes are the checks of a tool plugin (ABI 1.4): its definitions
// load (valid names, schemas that resolve); each tool answers minimal
// arguments built from its input schema, and the same with an
// authenticated caller and with fields no version defines, with a result
// (whose structured content fits its output schema) or a tool error; and a
// call of a tool it does not have is answered in order, not by a crash.
func toolProbes(ctx context.Context, rt *plugins.Runtime, spec plugins.Spec) []Result {
	spec.Kind = plugins.KindTools
	p, err := rt.Load(ctx, spec)
	if err != nil {
		return []Result{{Name: "tools: definitions", Err: err}}
	}
	defer func() { p.Close(context.WithoutCancel(ctx)) }()
	tools := p.ToolSet()
	rs := []Result{{Name: fmt.Sprintf("tools: %d definitions", len(tools))}}
	invoke := func(name, input string) {
		_, err := p.InvokeToolRaw(ctx, []byte(input))
		rs = append(rs, Result{Name: name, Err: err})
	}
	for i, t := range tools {
		if i == 16 {
			break
		}
		if i > 0 {
			// Each tool on a fresh load (the compile is the runtime's,
			// shared): one tool's crashes must not put the next in the
			// crash-loop backoff.
			p.Close(context.WithoutCancel(ctx))
			if p, err = rt.Load(ctx, spec); err != nil {
				return append(rs, Result{Name: "tools: reload", Err: err})
			}
		}
		args, ok := t.MinimalArguments()
		if !ok {
			rs = append(rs, Result{Name: "tool_invoke: " + t.Def.Name + ": skipped, no minimal arguments found for its schema"})
			continue
		}
		name, _ := json.Marshal(t.Def.Name)
		invoke("tool_invoke: "+t.Def.Name+": minimal arguments", `{"caller":{},"name":`+string(name)+`,"arguments":`+string(args)+`}`)
		invoke("tool_invoke: "+t.Def.Name+": an authenticated caller (1.3)", `{"caller":`+authenticated+`,"name":`+string(name)+`,"arguments":`+string(args)+`}`)
		invoke("tool_invoke: "+t.Def.Name+": unknown fields", `{"caller":{`+unknown+`},"name":`+string(name)+`,"arguments":`+string(args)+`,"progressToken":"p1",`+unknown+`}`)
	}
	p.Close(context.WithoutCancel(ctx))
	if p, err = rt.Load(ctx, spec); err != nil {
		return append(rs, Result{Name: "tools: reload", Err: err})
	}
	out, err := p.InvokeToolRaw(ctx, []byte(`{"caller":{},"name":"zz_no_such_tool","arguments":{}}`))
	var pe *plugins.PluginError
	switch {
	case errors.As(err, &pe):
		err = nil // an orderly refusal
	case err == nil && out.ToolError == nil:
		err = fmt.Errorf("a call of a tool it does not have was answered with a result: %s", out.Result)
	}
	rs = append(rs, Result{Name: "tool_invoke: an unknown tool", Err: err})
	return rs
}
