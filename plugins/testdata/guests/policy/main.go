//go:build wasip1

// Command policy is the test guest of package plugins: one module whose
// behaviour is chosen by Extism config ("mode", "mode.HOOK") or, for
// tool_call, by the "_mode" argument, so well-behaved and hostile plugins
// cost one build and one compile.
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"time"

	pdk "github.com/extism/go-pdk"
	"github.com/mcphost-project/mcphost/abi"
)

func main() {}

// buildVersion is set with -ldflags=-X main.buildVersion=... to build a
// second, different module from the same source.
var buildVersion = "v1"

var sink [][]byte

var fibSink uint64

// fib recurses about 2^42 times for 60.
//
//go:noinline
func fib(n uint64) uint64 {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

type cfgValue struct {
	v  string
	ok bool
}

// cfgCache: config is fixed for an instance's life, and each lookup is a
// round trip through the host.
var cfgCache = map[string]cfgValue{}

func cfg(key, def string) string {
	c, seen := cfgCache[key]
	if !seen {
		c.v, c.ok = pdk.GetConfig(key)
		cfgCache[key] = c
	}
	if c.ok {
		return c.v
	}
	return def
}

func name() string    { return cfg("name", "policy") }
func version() string { return cfg("version", buildVersion) }

func mode(hook string) string { return cfg("mode."+hook, cfg("mode", "")) }

// hostile runs a misbehaviour; ok is false when m names none.
func hostile(m string) (rc int32, ok bool) {
	switch m {
	case "loop":
		n := 0
		for {
			n++
		}
	case "recurse":
		// No loop of its own: only function entries can stop it.
		fibSink = fib(60)
		return 0, false
	case "sleep":
		time.Sleep(time.Hour)
		return 0, false
	case "alloc":
		for {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			sink = append(sink, b)
		}
	case "panic":
		panic("boom from " + name())
	case "exit":
		os.Exit(3)
	case "badjson":
		pdk.OutputString("{not json")
		return 0, true
	case "big":
		pdk.Output(bytes.Repeat([]byte(" "), 50<<20))
		return 0, true
	case "error":
		pdk.SetErrorString("policy error from " + name())
		return 1, true
	case "empty":
		return 0, true
	}
	return 0, false
}

func fail(err error) int32 {
	pdk.SetError(err)
	return 1
}

//go:wasmexport mcphost_describe
func describe() int32 {
	if rc, ok := hostile(cfg("mode.describe", "")); ok {
		return rc
	}
	var hooks []string
	if h := cfg("hooks", "tools_list,tool_call,tool_result"); h != "" {
		hooks = strings.Split(h, ",")
	}
	d := abi.Describe{ABI: cfg("abi", abi.Version), Name: name(), Version: version(), Hooks: hooks}
	if h := cfg("hints", ""); h != "" {
		d.Hints = new(abi.Hints)
		if err := json.Unmarshal([]byte(h), d.Hints); err != nil {
			return fail(err)
		}
	}
	if err := pdk.OutputJSON(d); err != nil {
		return fail(err)
	}
	return 0
}

//go:wasmexport mcphost_tools_list
func toolsList() int32 {
	m := mode("tools_list")
	if rc, ok := hostile(m); ok {
		return rc
	}
	var in abi.ToolsListInput
	if err := json.Unmarshal(pdk.Input(), &in); err != nil {
		return fail(err)
	}
	drop := map[string]bool{}
	if d := cfg("drop", ""); d != "" {
		for _, t := range strings.Split(d, ",") {
			drop[t] = true
		}
	}
	prefix := cfg("prefix", "")
	out := abi.ToolsListOutput{Tools: []abi.Tool{}}
	for _, t := range in.Tools {
		if drop[t.Tool] {
			continue
		}
		t.Name = prefix + t.Name
		switch m {
		case "clash":
			t.Name = "same"
		case "invalid":
			t.Name = "bad name!"
		case "tag":
			t.Description = name() + "@" + version()
		case "execution": // tells what it saw; forbids tasks on "two"; drops the rest, as a guest built before the field
			t.Description = string(t.Execution)
			t.Execution = nil
			if t.Tool == "two" {
				t.Execution = json.RawMessage(`{"taskSupport":"forbidden"}`)
			}
		}
		out.Tools = append(out.Tools, t)
	}
	switch m {
	case "foreign":
		out.Tools = append(out.Tools, abi.Tool{Name: "smuggled", Server: "nowhere", Tool: "smuggled"})
	case "reverse":
		for i, j := 0, len(out.Tools)-1; i < j; i, j = i+1, j-1 {
			out.Tools[i], out.Tools[j] = out.Tools[j], out.Tools[i]
		}
	}
	if err := pdk.OutputJSON(out); err != nil {
		return fail(err)
	}
	return 0
}

var allow = []byte(`{"action":"allow"}`)

//go:wasmexport mcphost_tool_call
func toolCall() int32 {
	m := mode("tool_call")
	if m == "noop" {
		pdk.Output(allow)
		return 0
	}
	var in abi.ToolCallInput
	if err := json.Unmarshal(pdk.Input(), &in); err != nil {
		return fail(err)
	}
	var args map[string]any
	if len(in.Arguments) > 0 {
		if err := json.Unmarshal(in.Arguments, &args); err != nil {
			return fail(err)
		}
	}
	if am, ok := args["_mode"].(string); ok {
		m = am
	}
	if ms, ok := args["_sleep_ms"].(float64); ok {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	if msg, ok := args["_log"].(string); ok {
		pdk.Log(pdk.LogInfo, msg)
	}
	if rc, ok := hostile(m); ok {
		return rc
	}
	d := abi.CallDecision{Action: abi.ActionAllow}
	switch m {
	case "deny":
		d = abi.CallDecision{Action: abi.ActionDeny, Reason: cfg("reason", "denied by "+name())}
	case "rewrite":
		if args == nil {
			args = map[string]any{}
		}
		args[name()] = version()
		b, _ := json.Marshal(args)
		d = abi.CallDecision{Action: abi.ActionRewrite, Arguments: b}
	case "rewrite-bad":
		d = abi.CallDecision{Action: abi.ActionRewrite, Arguments: json.RawMessage(`[1,2]`)}
	case "respond":
		d = abi.CallDecision{Action: abi.ActionRespond, Result: text(name() + "@" + version() + ":" + string(in.Arguments))}
	case "respond-null":
		d = abi.CallDecision{Action: abi.ActionRespond}
	case "badaction":
		d = abi.CallDecision{Action: "explode"}
	case "env":
		d = abi.CallDecision{Action: abi.ActionRespond, Result: text("env=" + os.Getenv(cfg("env", "SECRET")))}
	case "fs":
		b, err := os.ReadFile(cfg("file", "/etc/hostname"))
		s := "fs=" + string(b)
		if err != nil {
			s = "fserr=" + err.Error()
		}
		d = abi.CallDecision{Action: abi.ActionRespond, Result: text(s)}
	}
	if err := pdk.OutputJSON(d); err != nil {
		return fail(err)
	}
	return 0
}

func text(s string) *abi.CallToolResult {
	return &abi.CallToolResult{Content: []abi.Content{{Type: "text", Text: s}}}
}

//go:wasmexport mcphost_tool_result
func toolResult() int32 {
	m := mode("tool_result")
	if rc, ok := hostile(m); ok {
		return rc
	}
	var in abi.ToolResultInput
	if err := json.Unmarshal(pdk.Input(), &in); err != nil {
		return fail(err)
	}
	out := abi.ToolResultOutput{Result: in.Result}
	switch m {
	case "null":
		out.Result = nil
	case "badcontent":
		out.Result.Content = append(out.Result.Content, abi.Content{Type: "hologram"})
	case "passthrough":
	default:
		if out.Result == nil {
			out.Result = &abi.CallToolResult{}
		}
		out.Result.Content = append(out.Result.Content, abi.Content{Type: "text", Text: name() + "@" + version()})
	}
	if err := pdk.OutputJSON(out); err != nil {
		return fail(err)
	}
	return 0
}

//go:wasmexport mcphost_list
func list() int32 {
	m := mode("list")
	if rc, ok := hostile(m); ok {
		return rc
	}
	var in abi.ListInput
	if err := json.Unmarshal(pdk.Input(), &in); err != nil {
		return fail(err)
	}
	drop := map[string]bool{}
	for _, n := range strings.Split(cfg("drop", ""), ",") {
		drop[n] = true
	}
	out := abi.ListOutput{Items: []abi.Item{}}
	for _, it := range in.Items {
		if drop[it.Name] {
			continue
		}
		if m == "tag" {
			var v map[string]any
			if err := json.Unmarshal(it.Item, &v); err != nil {
				return fail(err)
			}
			v["description"] = name() + "@" + version() + " " + in.Method
			it.Item, _ = json.Marshal(v)
		}
		out.Items = append(out.Items, it)
	}
	switch m {
	case "foreign":
		out.Items = append(out.Items, abi.Item{Server: "nowhere", Name: "smuggled", Item: json.RawMessage(`{}`)})
	case "twice":
		out.Items = append(out.Items, out.Items...)
	case "reverse":
		for i, j := 0, len(out.Items)-1; i < j; i, j = i+1, j-1 {
			out.Items[i], out.Items[j] = out.Items[j], out.Items[i]
		}
	}
	if err := pdk.OutputJSON(out); err != nil {
		return fail(err)
	}
	return 0
}

//go:wasmexport mcphost_request
func request() int32 {
	m := mode("request")
	if rc, ok := hostile(m); ok {
		return rc
	}
	var in abi.RequestInput
	if err := json.Unmarshal(pdk.Input(), &in); err != nil {
		return fail(err)
	}
	d := abi.RequestDecision{Action: abi.ActionAllow}
	switch {
	case m == "deny", m == "deny-name" && in.Name == cfg("name.deny", ""):
		d = abi.RequestDecision{Action: abi.ActionDeny, Reason: cfg("reason", "denied "+in.Method+" "+in.Name+" by "+name())}
	case m == "badaction":
		d.Action = "rewrite"
	}
	if err := pdk.OutputJSON(d); err != nil {
		return fail(err)
	}
	return 0
}

//go:wasmexport mcphost_message
func message() int32 {
	m := mode("message")
	if rc, ok := hostile(m); ok {
		return rc
	}
	var in abi.MessageInput
	if err := json.Unmarshal(pdk.Input(), &in); err != nil {
		return fail(err)
	}
	var out abi.MessageOutput
	switch m {
	case "unchanged":
		out.Unchanged = true
	case "notobject":
		out.Message = json.RawMessage(`[1]`)
	case "both":
		out.Message, out.Unchanged = in.Message, true
	default:
		// Replaces the word "secret" wherever it is, and says who did.
		out.Message = bytes.ReplaceAll(in.Message, []byte("secret"), []byte(name()+"@"+version()))
	}
	if err := pdk.OutputJSON(out); err != nil {
		return fail(err)
	}
	return 0
}
