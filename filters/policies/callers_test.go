package policies

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcphost-project/mcphost/abi"
	"github.com/mcphost-project/mcphost/abi/policytest"
)

// Callers of the caller-condition tests.
var (
	alice = abi.Caller{Subject: "alice", Identity: "alice", Groups: []string{"eng"}, AuthMethod: abi.AuthKey}
	bob   = abi.Caller{Subject: "bob", Identity: "bob", Groups: []string{"admins", "ops"}, AuthMethod: abi.AuthOAuth}
	anon  = abi.Caller{Transport: "http"}
)

// conditioned are the built-ins that take a caller condition, each with a
// configuration under which it changes both the listing of conditionTools
// and the call of db__drop_table (and, if it has them, the prompts
// listing and prompts/get of db__schema).
var conditioned = map[string]policytest.Config{
	"allow":     {"tools": "files__*"},
	"deny":      {"tools": "db__drop_*", "prompts": "db__*"},
	"modes":     {"mode": "plan"},
	"arguments": {"fixed": `{"db__*":{"confirm":true}}`},
	"mentions":  {"allowed_servers": `{"files":["*"]}`},
}

var conditionTools = func() []abi.Tool {
	yes := true
	return []abi.Tool{
		{Name: "files__read", Server: "files", Tool: "read", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &abi.Annotations{ReadOnlyHint: &yes}},
		{Name: "db__drop_table", Server: "db", Tool: "drop_table",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"table":{"type":"string"},"confirm":{"type":"boolean"}},"required":["table","confirm"]}`)},
	}
}()

// withConfig returns base with the keys of extra added.
func withConfig(base, extra policytest.Config) policytest.Config {
	c := policytest.Config{}
	for k, v := range base {
		c[k] = v
	}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// governs reports whether the built-in name, configured with cfg, acted on
// caller: changed its listing and refused or rewrote its call (and likewise
// for prompts, where it has the list and request hooks). It fails the test
// when the hooks disagree.
func governs(t *testing.T, name string, cfg policytest.Config, caller abi.Caller) bool {
	t.Helper()
	call := func(export string, in any) []byte {
		t.Helper()
		p, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		out, err := policytest.Call(p, cfg, export, in)
		if err != nil {
			t.Fatalf("%s %v: %s: %v", name, cfg, export, err)
		}
		return out
	}
	listed := call(abi.ExportToolsList, abi.ToolsListInput{Caller: caller, Tools: conditionTools})
	want, _ := json.Marshal(abi.ToolsListOutput{Tools: conditionTools})
	same, err := policytest.EqualJSON(listed, want)
	if err != nil {
		t.Fatal(err)
	}
	var d abi.CallDecision
	if err := json.Unmarshal(call(abi.ExportToolCall, abi.ToolCallInput{Caller: caller, Name: "db__drop_table", Server: "db",
		Tool: "drop_table", Arguments: json.RawMessage(`{"table":"users"}`)}), &d); err != nil {
		t.Fatal(err)
	}
	acted := !same
	if got := d.Action != abi.ActionAllow; got != acted {
		t.Fatalf("%s %v for %+v: listing changed %v, but the call's action is %q", name, cfg, caller, acted, d.Action)
	}
	p, _ := New(name)
	if p.List == nil {
		return acted
	}
	items := []abi.Item{{Server: "db", Name: "db__schema", Item: json.RawMessage(`{"name":"db__schema"}`)}}
	var lo abi.ListOutput
	if err := json.Unmarshal(call(abi.ExportList, abi.ListInput{Caller: caller, Method: abi.MethodPromptsList, Items: items}), &lo); err != nil {
		t.Fatal(err)
	}
	var rd abi.RequestDecision
	if err := json.Unmarshal(call(abi.ExportRequest, abi.RequestInput{Caller: caller, Method: abi.MethodPromptsGet, Server: "db",
		Name: "db__schema", Params: json.RawMessage(`{"name":"schema"}`)}), &rd); err != nil {
		t.Fatal(err)
	}
	if got := len(lo.Items) == 0; got != acted {
		t.Fatalf("%s %v for %+v: tools governed %v, but the prompts listing kept %d", name, cfg, caller, acted, len(lo.Items))
	}
	if got := rd.Action == abi.ActionDeny; got != acted {
		t.Fatalf("%s %v for %+v: tools governed %v, but prompts/get got %+v", name, cfg, caller, acted, rd)
	}
	return acted
}

// TestCallerCondition checks, for every built-in that takes one, whom a
// caller condition lets the policy act on: everyone without one, only the
// named subjects and groups with subjects or groups, never the excepted.
// A caller the policy does not act on gets the listing unchanged and the
// call allowed.
func TestCallerCondition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		cond             policytest.Config
		alice, bob, anon bool // whether the policy acts on each
	}{
		{"none", nil, true, true, true},
		{"subjects", policytest.Config{"subjects": "alice"}, true, false, false},
		{"subjects list", policytest.Config{"subjects": `["carol", "bob"]`}, false, true, false},
		{"subjects exact case", policytest.Config{"subjects": "Alice"}, false, false, false},
		{"groups", policytest.Config{"groups": "eng"}, true, false, false},
		{"groups any of", policytest.Config{"groups": " qa ,ops"}, false, true, false},
		{"subjects or groups", policytest.Config{"subjects": "alice", "groups": "ops"}, true, true, false},
		{"except_groups", policytest.Config{"except_groups": "admins"}, true, false, true},
		{"except_subjects", policytest.Config{"except_subjects": "alice, carol"}, false, true, true},
		{"except wins over subjects", policytest.Config{"subjects": "alice,bob", "except_subjects": "bob"}, true, false, false},
		{"except wins over groups", policytest.Config{"groups": "eng,admins", "except_groups": "ops"}, true, false, false},
	}
	for name, base := range conditioned {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				cfg := withConfig(base, tt.cond)
				for _, c := range []struct {
					caller abi.Caller
					want   bool
				}{
					{alice, tt.alice}, {bob, tt.bob}, {anon, tt.anon},
					{abi.Caller{Identity: "alice"}, tt.anon}, // matching is on the subject, not the 1.0 identity
				} {
					if got := governs(t, name, cfg, c.caller); got != c.want {
						t.Errorf("acts on %+v: %v, want %v", c.caller, got, c.want)
					}
				}
			})
		}
	}
}

// TestCallerConditionConfig checks that a caller condition's keys are
// declared (so misspellings are refused) and that bad values are refused
// with an error naming the key.
func TestCallerConditionConfig(t *testing.T) {
	t.Parallel()
	bad := []struct {
		cond policytest.Config
		want string
	}{
		{policytest.Config{"groups": "eng,,ops"}, `config "groups": entry 2 of 3 is empty`},
		{policytest.Config{"subjects": ""}, `config "subjects": entry 1 of 1 is empty`},
		{policytest.Config{"subjects": "alice, "}, `config "subjects": entry 2 of 2 is empty`},
		{policytest.Config{"except_groups": "  "}, `config "except_groups": entry 1 of 1 is empty`},
		{policytest.Config{"except_subjects": `["alice", " "]`}, `config "except_subjects": entry 2 of 2 is empty`},
		{policytest.Config{"groups": `[]`}, `config "groups": names no one`},
		{policytest.Config{"subjects": `[1, 2]`}, `config "subjects": want a comma-separated string or a list of strings`},
	}
	keys := []string{"except_groups", "except_subjects", "groups", "subjects"}
	for name, base := range conditioned {
		t.Run(name, func(t *testing.T) {
			for _, b := range bad {
				p, _ := New(name)
				_, err := policytest.Call(p, withConfig(base, b.cond), abi.ExportDescribe, nil)
				if err == nil || !strings.Contains(err.Error(), b.want) {
					t.Errorf("%v: err = %v, want %q", b.cond, err, b.want)
				}
			}
			p, _ := New(name)
			out, err := policytest.Call(p, base, abi.ExportDescribe, nil)
			if err != nil {
				t.Fatal(err)
			}
			var d abi.Describe
			if err := json.Unmarshal(out, &d); err != nil || d.ConfigKeys == nil {
				t.Fatalf("describe %s: %v", out, err)
			}
			for _, k := range keys {
				if !contains(*d.ConfigKeys, k) {
					t.Errorf("configKeys %v lack %q", *d.ConfigKeys, k)
				}
			}
		})
	}
}

// TestCallerConditionHints checks that a built-in whose answers ignore the
// caller says so only while no caller condition is set: with one, the
// host must not share one caller's answers with another.
func TestCallerConditionHints(t *testing.T) {
	t.Parallel()
	ignores := map[string]bool{"allow": true, "deny": true, "modes": true, "arguments": true, "mentions": false}
	for name, base := range conditioned {
		for _, cond := range []policytest.Config{nil, {"subjects": "alice"}, {"groups": "eng"}, {"except_subjects": "bob"}, {"except_groups": "admins"}} {
			p, _ := New(name)
			cfg := withConfig(base, cond)
			if err := p.Configure(cfg.Source()); err != nil {
				t.Fatalf("%s %v: %v", name, cfg, err)
			}
			h := p.Hints()
			if want := ignores[name] && cond == nil; h.IgnoresCaller != want {
				t.Errorf("%s %v: ignoresCaller %v, want %v", name, cfg, h.IgnoresCaller, want)
			}
			if !h.ListPerTool {
				t.Errorf("%s %v: lost listPerTool", name, cfg)
			}
		}
	}
}
