package policies

import (
	"encoding/json"
	"path/filepath"
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
