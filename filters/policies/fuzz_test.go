package policies

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/pdk"
)

// configKeys are every configuration key of every policy, so the fuzzer
// tries outside values on each.
var configKeys = []string{
	"tools", "servers", "meta_key", "clients", "allowed_servers", "overrides", "prefix", "suffix",
	"on_limit", "max_description", "max_param_description", "max_title", "marker", "mode",
	"array_key", "errors", "max_chars", "max_binary_bytes", "binary", "paging_params",
	"patterns", "builtins", "arguments", "note", "mask", "fixed", "defaults",
	"prompts", "resources", "methods",
	"subjects", "groups", "except_subjects", "except_groups",
}

// FuzzPolicies configures a policy with one fuzzed value and runs every
// hook it has on a fuzzed input: nothing may panic (pdk would recover it
// into a plugin error, so the handlers are called directly here), and
// outputs must encode.
func FuzzPolicies(f *testing.F) {
	f.Add(uint8(0), uint8(0), `["files__*"]`, `{"caller":{"_meta":{"mentions":["server:files"]}},"tools":[{"name":"files__read","server":"files","tool":"read","inputSchema":{"type":"object","properties":{"root":{"description":"x"}},"required":["root"]}}]}`)
	f.Add(uint8(5), uint8(25), `{"*":{"root":"/srv"}}`, `{"name":"files__read","server":"files","tool":"read","arguments":{"a":"ghp_xxx"},"result":{"content":[{"type":"text","text":"{\"a\":[1]}"}]}}`)
	f.Add(uint8(9), uint8(20), `{"acme":"acme_[0-9]+"}`, `{"result":{"content":[{"type":"resource","resource":{"text":"acme_123","blob":"aGk="}}],"structuredContent":{"k":"sk-ant-aaaaaaaaaaaaaaaaaaaaaaaa"},"_meta":[1]}}`)
	f.Add(uint8(8), uint8(22), `true`, `{"result":{"content":[{"type":"resource_link","uri":"x:ghp_1","name":"n","_meta":{"ghp_k":"ghp_v"}}],"structuredContent":{"ghp_a":1,"ghp_a":2},"_meta":{"sk-x":{"ghp_y":["ghp_z"]}}}}`)
	f.Add(uint8(0), uint8(27), `["notes__*"]`, `{"method":"prompts/list","items":[{"server":"notes","name":"notes__a","item":{"name":"notes__a"}}]}`)
	f.Add(uint8(2), uint8(29), `["sampling/*"]`, `{"method":"completion/complete","server":"notes","name":"notes://{id}","params":{"ref":{"type":"ref/resource","uri":"notes://{id}"}}}`)
	f.Add(uint8(5), uint8(2), `"x"`, `{"caller":{"_meta":{"mentions":["resource:notes://{id}","prompt:p"]}},"method":"resources/read","server":"notes","name":"notes://1"}`)
	f.Add(uint8(10), uint8(16), `3`, `{"method":"resources/read","server":"files","message":{"contents":[{"uri":"a","text":"0123456789"},{"uri":"b","blob":"aGVsbG8="}]}}`)
	names := Names()
	f.Fuzz(func(t *testing.T, which, key uint8, value, input string) {
		name := names[int(which)%len(names)]
		if name == "pin" {
			return // touches the file system; TestPin covers it
		}
		k := configKeys[int(key)%len(configKeys)]
		cfg := map[string]string{k: value}
		// allow, deny and arguments need a key to load at all.
		if k != "tools" && k != "servers" {
			cfg["tools"] = "*"
		}
		if k != "fixed" && k != "defaults" {
			cfg["defaults"] = `{"*":{"limit":1}}`
		}
		p, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(pdk.ConfigSource(func(key string) (string, bool) { v, ok := cfg[key]; return v, ok })); err != nil {
			return
		}
		if p.ToolsList != nil {
			var in abi.ToolsListInput
			if json.Unmarshal([]byte(input), &in) == nil {
				if out, err := p.ToolsList(&in); err == nil && out != nil {
					mustEncode(t, out)
				}
			}
		}
		if p.ToolCall != nil {
			var in abi.ToolCallInput
			if json.Unmarshal([]byte(input), &in) == nil {
				if out, err := p.ToolCall(&in); err == nil && out != nil {
					mustEncode(t, out)
				}
			}
		}
		if p.ToolResult != nil {
			var in abi.ToolResultInput
			if json.Unmarshal([]byte(input), &in) == nil && in.Result != nil {
				if out, err := p.ToolResult(&in); err == nil && out != nil {
					mustEncode(t, out)
				}
			}
		}
		if p.List != nil {
			var in abi.ListInput
			if json.Unmarshal([]byte(input), &in) == nil {
				if out, err := p.List(&in); err == nil && out != nil {
					mustEncode(t, out)
				}
			}
		}
		if p.Request != nil {
			var in abi.RequestInput
			if json.Unmarshal([]byte(input), &in) == nil {
				if out, err := p.Request(&in); err == nil && out != nil {
					mustEncode(t, out)
				}
			}
		}
		if p.Message != nil {
			var in abi.MessageInput
			if json.Unmarshal([]byte(input), &in) == nil {
				if out, err := p.Message(&in); err == nil && out != nil {
					mustEncode(t, out)
				}
			}
		}
	})
}

// FuzzMessage runs the message hooks of redact and truncate on fuzzed
// messages of every method they take (and two they do not): nothing may
// panic; a changed message must be a JSON object that still holds every
// member the input's top level had, but for _meta; and a message the
// policy's hints promise to leave unchanged must be left unchanged.
func FuzzMessage(f *testing.F) {
	f.Add(uint8(0), `{"messages":[{"role":"user","content":{"type":"text","text":"ghp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA 0123456789"}},{"role":"user","content":{"type":"image","data":"aGVsbG8gd29ybGQ=","mimeType":"image/png"}}]}`)
	f.Add(uint8(1), `{"contents":[{"uri":"a","text":"AKIAIOSFODNN7EXAMPLE and more"},{"uri":"b","blob":"aGVsbG8gd29ybGQ="}],"_meta":null}`)
	f.Add(uint8(2), `{"level":"info","data":{"type":"audio","data":"ghp_x","k":["sk-ant-aaaaaaaaaaaaaaaaaaaaaaaa"]}}`)
	f.Add(uint8(3), `{"progressToken":1,"progress":1,"message":"xoxb-1234567890-abcdef and on and on"}`)
	f.Add(uint8(4), `{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"0123456789"},{"type":"image","data":"aGk="}]}]}],"_meta":[1]}`)
	f.Add(uint8(5), `{"message":"héllo wörld","requestedSchema":{"type":"object"}}`)
	f.Add(uint8(6), `{"completion":{"values":["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"]}}`)
	f.Add(uint8(7), `[1,"ghp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]`)
	methods := []string{
		abi.MethodPromptsGet, abi.MethodResourcesRead, abi.MethodLoggingMessage, abi.MethodProgress,
		abi.MethodCreateMessage, abi.MethodElicit, abi.MethodComplete, abi.MethodResourceUpdated, "x/y",
	}
	type policy struct {
		name  string
		hook  pdk.MessageFunc
		hints abi.Hints
	}
	var policies []policy
	for _, c := range []struct {
		name   string
		config map[string]string
	}{
		{"redact", nil},
		{"redact", map[string]string{"note": "false"}},
		{"truncate", map[string]string{"max_chars": "4", "max_binary_bytes": "4"}},
		{"truncate", map[string]string{"max_chars": "40", "max_binary_bytes": "60", "binary": "drop"}},
	} {
		p, err := New(c.name)
		if err != nil {
			f.Fatal(err)
		}
		if err := p.Configure(func(key string) (string, bool) { v, ok := c.config[key]; return v, ok }); err != nil {
			f.Fatal(err)
		}
		policies = append(policies, policy{c.name, p.Message, p.Hints()})
	}
	f.Fuzz(func(t *testing.T, which uint8, message string) {
		if !json.Valid([]byte(message)) {
			return // pdk refuses such input before a handler sees it
		}
		in := abi.MessageInput{Method: methods[int(which)%len(methods)], Server: "s", Message: json.RawMessage(message)}
		for _, p := range policies {
			out, err := p.hook(&in)
			if err != nil || out == nil {
				continue
			}
			if promisedUnchanged(&p.hints, in.Method, message) {
				t.Fatalf("%s changed %s message %s to %s, which its hints promise to leave alone", p.name, in.Method, message, out.Message)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(out.Message, &got); err != nil {
				t.Fatalf("%s: %s: message %s became %s, not a JSON object: %v", p.name, in.Method, message, out.Message, err)
			}
			var was map[string]json.RawMessage
			if json.Unmarshal([]byte(message), &was) == nil {
				for k := range was {
					if _, ok := got[k]; !ok && k != "_meta" {
						t.Fatalf("%s: %s: member %q of %s is missing from %s", p.name, in.Method, k, message, out.Message)
					}
				}
			}
		}
	})
}

// promisedUnchanged reports whether hints h promise that the message hook
// leaves msg of method unchanged, read as the host reads them.
func promisedUnchanged(h *abi.Hints, method, msg string) bool {
	if !h.WantsMethod(abi.HookMessage, method) || len(msg) < h.MessageMinBytes {
		return true
	}
	if len(h.MessageKeywords) == 0 || strings.Contains(msg, `\`) {
		return false
	}
	for _, k := range h.MessageKeywords {
		if strings.Contains(msg, k) {
			return false
		}
	}
	return true
}

// FuzzMessageWalk walks arbitrary JSON as redact walks a message: the
// result must be valid JSON, and must change only if some string was
// rewritten.
func FuzzMessageWalk(f *testing.F) {
	f.Add(`{"type":"image","data":"x","text":"x","blob":"x","k":[{"data":"x"}]}`)
	f.Add(`["x", 1, null, {"x": "x"}]`)
	f.Add(`"x"`)
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		out, changed, err := messageWalk(func(s string) (string, bool) {
			if !strings.Contains(s, "x") {
				return s, false
			}
			return strings.ReplaceAll(s, "x", "[y]"), true
		}, func(raw []byte) bool { return bytes.ContainsAny(raw, `x\`) }, "keep").walk(json.RawMessage(raw))
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%s became invalid JSON %s", raw, out)
		}
		if !changed && string(out) != raw {
			t.Fatalf("%s changed to %s without saying so", raw, out)
		}
	})
}

// FuzzTemplateGlob checks the matcher built from a mentioned URI
// template: it never panics, and a template matches itself.
func FuzzTemplateGlob(f *testing.F) {
	f.Add("notes://inbox/{id}", "notes://inbox/42")
	f.Add("file:///srv/{+path}{?q,r}", "file:///srv/a/b?q=1")
	f.Add("a{b", "a{b")
	f.Fuzz(func(t *testing.T, tmpl, uri string) {
		g, ok := templateGlob(tmpl)
		if !ok {
			return
		}
		_ = g.match(uri)
		if !g.match(tmpl) {
			t.Fatalf("template %q does not match itself", tmpl)
		}
	})
}

// FuzzCompletionKind reads the reference of fuzzed completion params.
func FuzzCompletionKind(f *testing.F) {
	f.Add(`{"ref":{"type":"ref/prompt","name":"a"}}`)
	f.Add(`{"ref":"x"}`)
	f.Fuzz(func(t *testing.T, params string) {
		switch k := completionKind(json.RawMessage(params)); k {
		case "", kindPrompts, kindResources:
		default:
			t.Fatalf("completionKind(%s) = %q", params, k)
		}
	})
}

// FuzzCallerCondition configures one key of a caller condition with a
// fuzzed value: an accepted value names at least one caller, every entry
// trimmed and non-empty, and the condition applies to exactly what it
// names (subjects, groups) or to everyone but what it names (except_*).
func FuzzCallerCondition(f *testing.F) {
	f.Add(uint8(0), "alice, bob")
	f.Add(uint8(1), `["eng", " ops "]`)
	f.Add(uint8(2), "a,,b")
	f.Add(uint8(3), `[]`)
	f.Add(uint8(1), `[1]`)
	f.Add(uint8(0), " ")
	keys := []string{keySubjects, keyGroups, keyExceptSubjects, keyExceptGroups}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		key := keys[int(which)%len(keys)]
		var c callerCondition
		err := c.configure(func(k string) (string, bool) { return value, k == key })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config \""+key+"\": ") {
				t.Fatalf("%s = %q: error %q does not name the key", key, value, err)
			}
			return
		}
		if !c.dependsOnCaller() {
			t.Fatalf("%s = %q accepted but the condition is not set", key, value)
		}
		entries := map[string][]string{keySubjects: c.subjects, keyGroups: c.groups,
			keyExceptSubjects: c.exceptSubjects, keyExceptGroups: c.exceptGroups}[key]
		if len(entries) == 0 {
			t.Fatalf("%s = %q accepted with no entries", key, value)
		}
		except := strings.HasPrefix(key, "except_")
		for _, e := range entries {
			if e == "" || e != strings.TrimSpace(e) {
				t.Fatalf("%s = %q: entry %q is empty or untrimmed", key, value, e)
			}
			caller := abi.Caller{Subject: e}
			if key == keyGroups || key == keyExceptGroups {
				caller = abi.Caller{Groups: []string{e}}
			}
			if c.applies(&caller) == except {
				t.Fatalf("%s = %q: applies to %+v is %v", key, value, caller, !except)
			}
		}
		if c.applies(&abi.Caller{}) != except {
			t.Fatalf("%s = %q: applies to an anonymous caller is %v", key, value, !except)
		}
	})
}

func mustEncode(t *testing.T, v any) {
	t.Helper()
	if _, err := json.Marshal(v); err != nil {
		t.Fatalf("output does not encode: %v", err)
	}
}

// FuzzPinFile feeds the pin file decoder, which reads a file operators edit.
func FuzzPinFile(f *testing.F) {
	f.Add(`{"version":1,"tools":{"a/b":{"server":"a","tool":"b","sha256":"x","definition":{}}}}`)
	f.Add(`{"version":1,"tools":{"a/b":null}}`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, data string) {
		pf, err := ParsePinFile([]byte(data))
		if err != nil {
			return
		}
		for _, k := range pf.Keys() {
			_ = pf.Approve(k, "now")
		}
		if err := WritePinFile(filepath.Join(t.TempDir(), "p.json"), pf); err != nil {
			t.Fatal(err)
		}
	})
}
