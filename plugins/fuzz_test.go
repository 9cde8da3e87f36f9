package plugins

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
)

// Native fuzzers for every decoder of plugin output: no input may panic,
// and whatever a decoder accepts must satisfy what the host relies on.

func FuzzDecodeDescribe(f *testing.F) {
	for _, s := range []string{
		`{"abi":"1.0","name":"p","version":"1","hooks":["tools_list","tool_call","tool_result"]}`,
		`{"abi":"1.7","name":"p","hooks":["tool_call","later_hook"]}`,
		`{"abi":"2.0","name":"p","hooks":[]}`,
		`{"abi":"1","name":"p"}`, `{"abi":"+1.-0","name":"p"}`, `{"abi":"1.0"}`,
		`{"abi":"1.0","name":"p","hooks":["tool_call","tool_call"]}`,
		`{"abi":"1.1","name":"p","hooks":["tools_list"],"hints":{"listPerTool":true,"ignoresCaller":true,"resultMinBytes":20001}}`,
		`{"abi":"1.1","name":"p","hooks":[],"hints":{"resultMinBytes":-1}}`, `{"abi":"1.1","name":"p","hints":[]}`,
		`[]`, `null`, ``, `{`, `{"abi":1}`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, exportAll bool) {
		d, err := decodeDescribe(data, func(string) bool { return exportAll })
		if err != nil {
			if !errors.Is(err, ErrInvalidDescribe) && !errors.Is(err, ErrABIVersion) && !errors.Is(err, ErrMissingExport) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		major, _, err := parseABI(d.ABI)
		if err != nil || major != abi.Major || d.Name == "" {
			t.Fatalf("accepted %+v", d.Describe)
		}
		if d.Hints != nil && d.Hints.ResultMinBytes < 0 {
			t.Fatalf("accepted hints %+v", *d.Hints)
		}
		seen := map[string]bool{}
		for _, h := range d.Hooks {
			if _, ok := abi.ExportForHook(h); !ok || seen[h] {
				t.Fatalf("accepted hooks %v", d.Hooks)
			}
			seen[h] = true
		}
	})
}

func FuzzDecodeToolsList(f *testing.F) {
	in := catalog()
	in[0].Execution = json.RawMessage(`{"taskSupport":"required"}`)
	good, _ := json.Marshal(abi.ToolsListOutput{Tools: in})
	f.Add(good)
	for _, s := range []string{
		`{"tools":[]}`, `{"tools":null}`, `{}`, `{"tools":[{"name":"x","server":"a","tool":"one"}]}`,
		`{"tools":[{"name":"x","server":"a","tool":"one"},{"name":"x","server":"a","tool":"two"}]}`,
		`{"tools":[{"name":"1x","server":"a","tool":"one"}]}`, `{"tools":[{"name":"reserved","server":"a","tool":"one"}]}`,
		`{"tools":[{"name":"y","server":"z","tool":"one"}]}`, `{"tools":{}}`, `[]`,
		`{"tools":[{"name":"x","server":"a","tool":"one","execution":{"taskSupport":"optional"}}]}`,
		`{"tools":[{"name":"x","server":"a","tool":"one","execution":null}]}`,
		`{"tools":[{"name":"x","server":"a","tool":"two","execution":"required"}]}`,
	} {
		f.Add([]byte(s))
	}
	reserved := map[string]bool{"reserved": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		tools, err := decodeToolsList(data, in, reserved)
		if err != nil {
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		known := map[toolKey]bool{}
		for _, t := range in {
			known[toolKey{t.Server, t.Tool}] = true
		}
		names := map[string]bool{}
		for _, tool := range tools {
			if !abi.ValidToolName(tool.Name) || names[tool.Name] || reserved[tool.Name] || !known[toolKey{tool.Server, tool.Tool}] {
				t.Fatalf("accepted %+v", tool)
			}
			if tool.Execution != nil && !isObject(tool.Execution) {
				t.Fatalf("accepted execution %s", tool.Execution)
			}
			if tool.Server == "a" && tool.Tool == "one" && tool.Execution == nil {
				t.Fatalf("dropped the input's execution: %+v", tool)
			}
			names[tool.Name] = true
		}
	})
}

func FuzzDecodeCallDecision(f *testing.F) {
	for _, s := range []string{
		`{"action":"allow"}`, `{"action":"deny","reason":"no"}`, `{"action":"rewrite","arguments":{"a":1}}`,
		`{"action":"rewrite","arguments":[1]}`, `{"action":"rewrite"}`,
		`{"action":"respond","result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"action":"respond","result":{"content":[{"type":"hologram"}]}}`, `{"action":"respond"}`,
		`{"action":"respond","result":{"content":null,"structuredContent":[1]}}`,
		`{"action":"explode"}`, `{}`, `null`, ``, ` {"action":"allow"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := decodeCallDecision(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		switch d.Action {
		case abi.ActionAllow, abi.ActionDeny:
		case abi.ActionRewrite:
			var obj map[string]json.RawMessage
			if json.Unmarshal(d.Arguments, &obj) != nil {
				t.Fatalf("accepted rewrite arguments %s", d.Arguments)
			}
		case abi.ActionRespond:
			if d.Result == nil || d.Result.Content == nil {
				t.Fatalf("accepted respond %+v", d)
			}
		default:
			t.Fatalf("accepted action %q", d.Action)
		}
	})
}

func FuzzDecodeToolResult(f *testing.F) {
	for _, s := range []string{
		`{"result":{"content":[{"type":"text","text":"x"}]}}`, `{"result":{"content":[],"isError":true}}`,
		`{"result":{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}],"structuredContent":{"a":1}}}`,
		`{"result":null}`, `{"result":{"content":[{"type":"x"}]}}`, `{"result":{"structuredContent":"s"}}`,
		`{}`, `null`, `"x"`, `{"unchanged":true}`, `{"unchanged":false}`,
		`{"unchanged":true,"result":{"content":[]}}`, `{"unchanged":"yes"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeToolResult(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if r == nil {
			var out abi.ToolResultOutput
			if json.Unmarshal(data, &out) != nil || !out.Unchanged || out.Result != nil {
				t.Fatalf("reported unchanged for %q", data)
			}
			return
		}
		if r.Content == nil {
			t.Fatalf("accepted %+v", r)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("accepted a result that does not encode: %v", err)
		}
	})
}

func FuzzDecodeList(f *testing.F) {
	in := listing()
	good, _ := json.Marshal(abi.ListOutput{Items: in})
	f.Add(good)
	for _, s := range []string{
		`{"items":[]}`, `{"items":null}`, `{}`, `{"items":[{"server":"a","name":"a__p1","item":{}}]}`,
		`{"items":[{"server":"a","name":"a__p1","item":{}},{"server":"a","name":"a__p1","item":{}}]}`,
		`{"items":[{"server":"a","name":"a__p1","item":[1]}]}`, `{"items":[{"server":"a","name":"a__p1"}]}`,
		`{"items":[{"server":"z","name":"a__p1","item":{}}]}`, `{"items":{}}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := decodeList(data, in)
		if err != nil {
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		known := map[itemKey]bool{}
		for _, it := range in {
			known[itemKey{it.Server, it.Name}] = true
		}
		seen := map[itemKey]bool{}
		for _, it := range items {
			k := itemKey{it.Server, it.Name}
			if !known[k] || seen[k] || !json.Valid(it.Item) || !isObject(it.Item) {
				t.Fatalf("accepted %+v", it)
			}
			seen[k] = true
		}
	})
}

func FuzzDecodeRequestDecision(f *testing.F) {
	for _, s := range []string{
		`{"action":"allow"}`, `{"action":"deny","reason":"no"}`, `{"action":"rewrite"}`, `{"action":""}`,
		`{}`, `[]`, `{"action":"deny","reason":5}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := decodeRequestDecision(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if d.Action != abi.ActionAllow && d.Action != abi.ActionDeny {
			t.Fatalf("accepted %+v", d)
		}
	})
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"unchanged":true}`, `{"message":{"contents":[]}}`, `{"message":[1]}`, `{"message":"x"}`,
		`{"unchanged":true,"message":{}}`, `{}`, `{"message":null}`, `[]`, `{"message":{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := decodeMessage(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if msg != nil && (!json.Valid(msg) || !isObject(msg)) {
			t.Fatalf("accepted message %q", msg)
		}
	})
}
